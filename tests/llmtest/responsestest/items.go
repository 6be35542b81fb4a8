package responsestest

import (
	"encoding/json"
	"fmt"
	"slices"
)

// item is one input item (or a stored output item, parsed the same way).
type item struct {
	Type                     string          `json:"type"`
	ID                       string          `json:"id"`
	Role                     string          `json:"role"`
	Status                   string          `json:"status"`
	Content                  json.RawMessage `json:"content"`
	CallID                   string          `json:"call_id"`
	Name                     string          `json:"name"`
	Arguments                *string         `json:"arguments"`
	Output                   json.RawMessage `json:"output"`
	Action                   map[string]any  `json:"action"`
	PendingSafetyChecks      *[]SafetyCheck  `json:"pending_safety_checks"`
	AcknowledgedSafetyChecks []SafetyCheck   `json:"acknowledged_safety_checks"`
	Summary                  *[]struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"summary"`
	EncryptedContent *string `json:"encrypted_content"`

	path   string    // where it was sent: "input[3]"
	tokens int       // its estimated tokens
	segs   []segment // its prompt, for the prefix cache
}

// The keys each item type takes.
var itemKeys = map[string]map[string]bool{
	"message":              set("type", "id", "role", "content", "status", "phase"),
	"function_call":        set("type", "id", "call_id", "name", "arguments", "status"),
	"function_call_output": set("type", "id", "call_id", "output", "status"),
	"computer_call":        set("type", "id", "call_id", "action", "pending_safety_checks", "status"),
	"computer_call_output": set("type", "id", "call_id", "output", "acknowledged_safety_checks", "status"),
	"reasoning":            set("type", "id", "summary", "content", "encrypted_content", "status"),
	"item_reference":       set("type", "id"),
}

// The keys each content part type takes.
var partKeys = map[string]map[string]bool{
	"input_text":  set("type", "text"),
	"input_image": set("type", "image_url", "file_id", "detail"),
	"input_file":  set("type", "file_id", "file_data", "file_url", "filename"),
	"output_text": set("type", "text", "annotations", "logprobs"),
	"refusal":     set("type", "refusal"),
}

// part is one content part of a message or a tool output.
type part struct {
	Type     string  `json:"type"`
	Text     *string `json:"text"`
	ImageURL *string `json:"image_url"`
	FileID   *string `json:"file_id"`
	Detail   string  `json:"detail"`
	Refusal  *string `json:"refusal"`
}

func (p *parser) input(raw map[string]json.RawMessage) *apiError {
	in := raw["input"]
	var s string
	if json.Unmarshal(in, &s) == nil {
		b, _ := json.Marshal(map[string]string{"role": "user", "content": s})
		it, e := p.item("input", b)
		if e != nil {
			return e
		}
		p.req.Input = []*item{it}
		return nil
	}
	var list []json.RawMessage
	if e := decodeField(raw, "input", &list); e != nil {
		return e
	}
	for i, el := range list {
		it, e := p.item(fmt.Sprintf("input[%d]", i), el)
		if e != nil {
			return e
		}
		p.req.Input = append(p.req.Input, it)
	}
	return nil
}

// item parses and checks one input item.
func (p *parser) item(path string, el json.RawMessage) (*item, *apiError) {
	it := &item{path: path}
	keys, e := decodeObject(path, el, it)
	if e != nil {
		return nil, e
	}
	if it.Type == "" && it.Role != "" {
		it.Type = "message"
	}
	allowed := itemKeys[it.Type]
	switch {
	case it.Type == "":
		return nil, missing(path + ".type")
	case allowed == nil:
		return nil, unsimulated(path+".type", "input items of type '%s'", it.Type)
	}
	for _, k := range keys {
		if !allowed[k] {
			return nil, unknownParam(path + "." + k)
		}
	}
	var req []string // required parameters
	switch it.Type {
	case "message":
		req = []string{"role", "content"}
	case "function_call":
		req = []string{"call_id", "name", "arguments"}
	case "function_call_output":
		req = []string{"call_id", "output"}
	case "computer_call":
		req = []string{"id", "call_id", "action", "pending_safety_checks"}
	case "computer_call_output":
		req = []string{"call_id", "output"}
	case "reasoning":
		req = []string{"id", "summary"}
	case "item_reference":
		req = []string{"id"}
	}
	for _, k := range req {
		if !slices.Contains(keys, k) {
			return nil, missing(path + "." + k)
		}
	}
	switch it.Type {
	case "message":
		if e = oneOf(path+".role", it.Role, "assistant", "system", "developer", "user"); e == nil {
			e = p.content(path+".content", it.Content, it.Role == "assistant")
		}
	case "function_call_output":
		e = p.content(path+".output", it.Output, false)
	case "computer_call":
		if msg := checkAction(it.Action); msg != "" {
			e = invalid(path+".action", "invalid_value", "Invalid '%s.action': %s.", path, msg)
		}
	case "computer_call_output":
		e = p.screenshot(path+".output", it.Output)
	}
	if e != nil {
		return nil, e
	}
	it.segs = p.segments(el)
	it.tokens = promptTokens(it.segs)
	return it, nil
}

// content checks a message's content or a function output: a string or a
// list of parts (output parts for the assistant, input parts otherwise).
func (p *parser) content(path string, raw json.RawMessage, assistant bool) *apiError {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return badType(path, "one of a string or an array of content parts", jsonKind(raw))
	}
	types := []string{"input_text", "input_image", "input_file"}
	if assistant {
		types = []string{"output_text", "refusal"}
	}
	for j, el := range list {
		pp := fmt.Sprintf("%s[%d]", path, j)
		var pt part
		keys, e := decodeObject(pp, el, &pt)
		if e != nil {
			return e
		}
		if e := oneOf(pp+".type", pt.Type, types...); e != nil {
			return e
		}
		for _, k := range keys {
			if !partKeys[pt.Type][k] {
				return unknownParam(pp + "." + k)
			}
		}
		switch pt.Type {
		case "input_text", "output_text":
			if pt.Text == nil {
				return missing(pp + ".text")
			}
		case "refusal":
			if pt.Refusal == nil {
				return missing(pp + ".refusal")
			}
		case "input_file":
			return unsimulated(pp, "input files")
		case "input_image":
			if pt.Detail == "" {
				pt.Detail = "auto"
			}
			if e := oneOf(pp+".detail", pt.Detail, "low", "high", "auto"); e != nil {
				return e
			}
			if e := p.image(pp, "input_image", pt.ImageURL, pt.FileID, pt.Detail); e != nil {
				return e
			}
		}
	}
	return nil
}

// screenshot checks a computer_call_output's output:
// {type: "computer_screenshot", image_url: a data URL}.
func (p *parser) screenshot(path string, raw json.RawMessage) *apiError {
	var out struct {
		Type     string  `json:"type"`
		ImageURL *string `json:"image_url"`
		FileID   *string `json:"file_id"`
	}
	keys, e := decodeObject(path, raw, &out)
	if e != nil {
		return e
	}
	if out.Type == "" {
		return missing(path + ".type")
	}
	if e := oneOf(path+".type", out.Type, "computer_screenshot"); e != nil {
		return e
	}
	for _, k := range keys {
		if k != "type" && k != "image_url" && k != "file_id" {
			return unknownParam(path + "." + k)
		}
	}
	return p.image(path, "computer_call_output", out.ImageURL, out.FileID, "auto")
}

// image checks an image given by URL and records it.
func (p *parser) image(path, source string, url, fileID *string, detail string) *apiError {
	switch {
	case fileID != nil:
		return unsimulated(path+".file_id", "the Files API: send images as data URLs")
	case url == nil:
		return missing(path + ".image_url")
	}
	im, e := p.s.images.decode(path+".image_url", *url)
	if e != nil {
		return e
	}
	im.Path, im.Source, im.Detail = path, source, detail
	p.req.images = append(p.req.images, im)
	return nil
}

// optional is oneOf for a parameter that may be left out ("").
func optional(param, got string, values ...string) *apiError {
	if got == "" {
		return nil
	}
	return oneOf(param, got, values...)
}

// oneOf refuses got unless it is one of values.
func oneOf(param, got string, values ...string) *apiError {
	if slices.Contains(values, got) {
		return nil
	}
	return badValue(param, got, quoteList(values))
}
