package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Native computer tools. Claude's `computer` tool and OpenAI's
// computer-use-preview act on a display the request declares; the model
// names points in its pixels and is shown screenshots of exactly its size.
// A backend parses the provider's action object into an Action, the
// neutral form the agent carries out (core/agent/native.go), and keeps the
// object itself to send back unchanged.

// ComputerTool is the name a native computer call has in the neutral
// conversation (Claude's tool is called so; OpenAI's computer_call is
// given the same name).
const ComputerTool = "computer"

// Display is the screen a native computer tool is told about.
type Display struct {
	Width, Height int
	// OS is the guest's ("linux" or "macos"): OpenAI's environment.
	OS string
}

// The largest image Anthropic takes without downscaling it (which would
// move the points the model names): long edge and total pixels.
const (
	maxDisplayEdge   = 1568
	maxDisplayPixels = 1_150_000
)

// The box a declared display fits in: XGA. Every screenshot is a prompt's
// largest part and is billed by its size (Anthropic: width×height/750
// tokens; OpenAI: 512-pixel tiles once the short side is 768 at most).
// XGA is the smallest of Anthropic's computer-use reference sizes, and
// 1024 pixels is two of OpenAI's tiles: a 1280x800 screen declared as
// 1024x640 costs Claude 874 tokens a screenshot, not 1,366, and
// computer-use-preview 4 tiles, not 6.
const (
	DisplayBoxWidth  = 1024
	DisplayBoxHeight = 768
)

// DisplayFor is the display declared to a model for a guest screen of w x
// h logical points: a screen larger than XGA's box (1024x768) is scaled to
// fit it, keeping its aspect ratio (4:3 to 1024x768, 16:10 to 1024x640,
// 16:9 to 1024x576); a smaller one is declared as it is. Either is within
// Claude's image limits (long edge 1568, 1.15 megapixels), so no image is
// scaled again by the API.
func DisplayFor(w, h int) Display {
	if w <= 0 || h <= 0 {
		return Display{Width: DisplayBoxWidth, Height: 640}
	}
	scale := min(1, float64(DisplayBoxWidth)/float64(w), float64(DisplayBoxHeight)/float64(h))
	if scale >= 1 {
		return Display{Width: w, Height: h}
	}
	return Display{Width: max(1, int(math.Round(float64(w)*scale))), Height: max(1, int(math.Round(float64(h)*scale)))}
}

// Action kinds.
const (
	ActKey            = "key"             // press Keys (each a combination such as "ctrl+s"), in turn
	ActHoldKey        = "hold_key"        // hold Keys[0] for Seconds
	ActType           = "type"            // type Text
	ActCursorPosition = "cursor_position" // say where the pointer is
	ActMove           = "move"            // move the pointer to Point
	ActMouseDown      = "mouse_down"      // press Button (at Point, when set)
	ActMouseUp        = "mouse_up"        // release Button (at Point, when set)
	ActClick          = "click"           // click Button Clicks times at Point (where the pointer is when nil)
	ActDrag           = "drag"            // press at Path[0], move along Path, release at its end
	ActScroll         = "scroll"          // ScrollX, ScrollY wheel clicks at Point
	ActWait           = "wait"            // wait Seconds
	ActScreenshot     = "screenshot"      // take a screenshot
	ActZoom           = "zoom"            // show Region at the screen's full resolution
)

// Point is a point of the declared display, in its pixels.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Action is a native computer call in neutral form.
type Action struct {
	Kind   string  `json:"kind"`
	Point  *Point  `json:"point,omitempty"`
	Path   []Point `json:"path,omitempty"`
	Button string  `json:"button,omitempty"` // left, right, middle
	Clicks int     `json:"clicks,omitempty"`
	// Keys are key combinations in xdotool's syntax ("ctrl+s", "Return",
	// "KP_0"); Hold the keys held down during a click, move, drag or
	// scroll ("shift").
	Keys []string `json:"keys,omitempty"`
	Hold []string `json:"hold,omitempty"`
	Text string   `json:"text,omitempty"`
	// ScrollX and ScrollY are wheel clicks: positive right and down.
	ScrollX int     `json:"scrollX,omitempty"`
	ScrollY int     `json:"scrollY,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	// Region is x0, y0, x1, y1 of the display (zoom).
	Region []float64 `json:"region,omitempty"`
}

// Bounds of actions: what a model may ask for at once.
const (
	maxScrollClicks = 50
	maxWaitSeconds  = 60
	maxHoldSeconds  = 30
	maxActionText   = 64 << 10
	maxDragPoints   = 64
)

// strictDecode decodes an action object, refusing fields its type does not
// know: a misspelt argument is an error the model reads, not a default.
func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the action's arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// claudeAction is the input of Claude's computer tool (computer_20250124
// and computer_20251124).
type claudeAction struct {
	Action          string    `json:"action"`
	Coordinate      []float64 `json:"coordinate,omitempty"`
	StartCoordinate []float64 `json:"start_coordinate,omitempty"`
	Text            *string   `json:"text,omitempty"`
	Duration        *float64  `json:"duration,omitempty"`
	ScrollDirection string    `json:"scroll_direction,omitempty"`
	ScrollAmount    *float64  `json:"scroll_amount,omitempty"`
	Region          []float64 `json:"region,omitempty"`
}

// ParseClaudeAction reads the input of Claude's computer tool. zoom says
// the tool version offered has the zoom action.
func ParseClaudeAction(raw json.RawMessage, zoom bool) (*Action, error) {
	var in claudeAction
	if err := strictDecode(raw, &in); err != nil {
		return nil, err
	}
	a := &Action{}
	point := func(c []float64, name string, required bool) (*Point, error) {
		if c == nil {
			if required {
				return nil, fmt.Errorf("%s needs %s [x, y]", in.Action, name)
			}
			return nil, nil
		}
		if len(c) != 2 {
			return nil, fmt.Errorf("%s: %s must be [x, y], not %d numbers", in.Action, name, len(c))
		}
		return &Point{c[0], c[1]}, nil
	}
	text := func(required bool) (string, error) {
		if in.Text == nil {
			if required {
				return "", fmt.Errorf("%s needs text", in.Action)
			}
			return "", nil
		}
		if len(*in.Text) > maxActionText {
			return "", fmt.Errorf("%s: the text is longer than %d KB", in.Action, maxActionText>>10)
		}
		return *in.Text, nil
	}
	var err error
	switch in.Action {
	case "key":
		a.Kind = ActKey
		var k string
		if k, err = text(true); err == nil {
			a.Keys = []string{k}
		}
	case "hold_key":
		a.Kind = ActHoldKey
		var k string
		if k, err = text(true); err == nil {
			a.Keys = []string{k}
			a.Seconds, err = seconds(in.Action, in.Duration, maxHoldSeconds, true)
		}
	case "type":
		a.Kind = ActType
		a.Text, err = text(true)
	case "cursor_position":
		a.Kind = ActCursorPosition
	case "mouse_move":
		a.Kind = ActMove
		a.Point, err = point(in.Coordinate, "coordinate", true)
	case "left_mouse_down", "left_mouse_up":
		a.Kind, a.Button = ActMouseDown, "left"
		if in.Action == "left_mouse_up" {
			a.Kind = ActMouseUp
		}
		a.Point, err = point(in.Coordinate, "coordinate", false)
	case "left_click", "right_click", "middle_click", "double_click", "triple_click":
		a.Kind, a.Button, a.Clicks = ActClick, "left", 1
		switch in.Action {
		case "right_click":
			a.Button = "right"
		case "middle_click":
			a.Button = "middle"
		case "double_click":
			a.Clicks = 2
		case "triple_click":
			a.Clicks = 3
		}
		if a.Point, err = point(in.Coordinate, "coordinate", false); err == nil {
			var hold string
			if hold, err = text(false); err == nil && hold != "" {
				a.Hold = splitCombo(hold)
			}
		}
	case "left_click_drag":
		a.Kind = ActDrag
		var from, to *Point
		if from, err = point(in.StartCoordinate, "start_coordinate", true); err == nil {
			if to, err = point(in.Coordinate, "coordinate", true); err == nil {
				a.Path = []Point{*from, *to}
			}
		}
	case "scroll":
		a.Kind = ActScroll
		if a.Point, err = point(in.Coordinate, "coordinate", false); err != nil {
			break
		}
		n := 3.0
		if in.ScrollAmount != nil {
			n = *in.ScrollAmount
		}
		if n < 0 || n > maxScrollClicks || n != math.Trunc(n) {
			err = fmt.Errorf("scroll: scroll_amount must be a whole number from 0 to %d, not %g", maxScrollClicks, n)
			break
		}
		switch in.ScrollDirection {
		case "up":
			a.ScrollY = -int(n)
		case "down":
			a.ScrollY = int(n)
		case "left":
			a.ScrollX = -int(n)
		case "right":
			a.ScrollX = int(n)
		default:
			err = fmt.Errorf("scroll: scroll_direction must be up, down, left or right, not %q", in.ScrollDirection)
		}
		if err == nil {
			var hold string
			if hold, err = text(false); err == nil && hold != "" {
				a.Hold = splitCombo(hold)
			}
		}
	case "wait":
		a.Kind = ActWait
		a.Seconds, err = seconds(in.Action, in.Duration, maxWaitSeconds, false)
		if err == nil && in.Duration == nil {
			a.Seconds = 1
		}
	case "screenshot":
		a.Kind = ActScreenshot
	case "zoom":
		if !zoom {
			return nil, fmt.Errorf("zoom is not an action of this computer tool")
		}
		a.Kind = ActZoom
		if len(in.Region) != 4 {
			return nil, fmt.Errorf("zoom needs region [x0, y0, x1, y1]")
		}
		a.Region = in.Region
	case "":
		return nil, fmt.Errorf("the computer tool needs an action")
	default:
		return nil, fmt.Errorf("unknown computer action %q", truncate(in.Action, 40))
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

func seconds(action string, v *float64, most float64, required bool) (float64, error) {
	if v == nil {
		if required {
			return 0, fmt.Errorf("%s needs duration (seconds)", action)
		}
		return 0, nil
	}
	if *v < 0 || *v > most || math.IsNaN(*v) {
		return 0, fmt.Errorf("%s: duration must be from 0 to %g seconds, not %g", action, most, *v)
	}
	return *v, nil
}

// splitCombo splits "ctrl+shift" into its keys.
func splitCombo(s string) []string {
	var out []string
	for _, k := range strings.Split(s, "+") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// openAIAction is a computer_call's action (computer-use-preview).
type openAIAction struct {
	Type    string   `json:"type"`
	X       *float64 `json:"x,omitempty"`
	Y       *float64 `json:"y,omitempty"`
	Button  string   `json:"button,omitempty"`
	Keys    []string `json:"keys,omitempty"`
	Path    []Point  `json:"path,omitempty"`
	ScrollX *float64 `json:"scroll_x,omitempty"`
	ScrollY *float64 `json:"scroll_y,omitempty"`
	Text    *string  `json:"text,omitempty"`
}

// scrollPixelsPerClick converts OpenAI's scroll distances, in pixels, to
// wheel clicks (a click scrolls about three lines).
const scrollPixelsPerClick = 100

// ParseOpenAIAction reads a computer_call's action.
func ParseOpenAIAction(raw json.RawMessage) (*Action, error) {
	var in openAIAction
	if err := strictDecode(raw, &in); err != nil {
		return nil, err
	}
	a := &Action{}
	point := func() (*Point, error) {
		if in.X == nil || in.Y == nil {
			return nil, fmt.Errorf("%s needs x and y", in.Type)
		}
		return &Point{*in.X, *in.Y}, nil
	}
	var err error
	switch in.Type {
	case "click", "double_click":
		a.Kind, a.Clicks, a.Hold = ActClick, 1, in.Keys
		if in.Type == "double_click" {
			a.Clicks = 2
		}
		switch in.Button {
		case "", "left":
			a.Button = "left"
		case "right":
			a.Button = "right"
		case "wheel", "middle":
			a.Button = "middle"
		case "back", "forward":
			return nil, fmt.Errorf("click: the guest has no %s mouse button; press alt+Left or alt+Right instead", in.Button)
		default:
			return nil, fmt.Errorf("click: unknown button %q", truncate(in.Button, 20))
		}
		a.Point, err = point()
	case "move":
		a.Kind, a.Hold = ActMove, in.Keys
		a.Point, err = point()
	case "drag":
		a.Kind, a.Hold = ActDrag, in.Keys
		if len(in.Path) < 2 || len(in.Path) > maxDragPoints {
			return nil, fmt.Errorf("drag: path needs from 2 to %d points, not %d", maxDragPoints, len(in.Path))
		}
		a.Path = in.Path
	case "keypress":
		if len(in.Keys) == 0 {
			return nil, fmt.Errorf("keypress needs keys")
		}
		// OpenAI names keys in capitals ("CTRL", "S"): a letter is the
		// key, not its shifted form (as xdotool's "S" would be).
		keys := make([]string, len(in.Keys))
		for i, k := range in.Keys {
			if utf8.RuneCountInString(k) == 1 {
				k = strings.ToLower(k)
			}
			keys[i] = k
		}
		a.Kind, a.Keys = ActKey, []string{strings.Join(keys, "+")}
	case "type":
		if in.Text == nil {
			return nil, fmt.Errorf("type needs text")
		}
		if len(*in.Text) > maxActionText {
			return nil, fmt.Errorf("type: the text is longer than %d KB", maxActionText>>10)
		}
		a.Kind, a.Text = ActType, *in.Text
	case "scroll":
		a.Kind, a.Hold = ActScroll, in.Keys
		if a.Point, err = point(); err != nil {
			break
		}
		clicks := func(v *float64) int {
			if v == nil || *v == 0 {
				return 0
			}
			n := int(math.Round(math.Abs(*v) / scrollPixelsPerClick))
			n = min(max(n, 1), maxScrollClicks)
			if *v < 0 {
				return -n
			}
			return n
		}
		a.ScrollX, a.ScrollY = clicks(in.ScrollX), clicks(in.ScrollY)
	case "wait":
		a.Kind, a.Seconds = ActWait, 2
	case "screenshot":
		a.Kind = ActScreenshot
	case "":
		return nil, fmt.Errorf("the computer call has no action type")
	default:
		return nil, fmt.Errorf("unknown computer action %q", truncate(in.Type, 40))
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}
