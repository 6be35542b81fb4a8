package llm

import (
	"encoding/json"
	"strings"
)

// The provider-neutral conversation. The agent holds its conversation in
// these types, never a vendor's; each backend translates them to its wire
// format (chat.go: Chat Completions, responses.go: the Responses API,
// anthropic.go: Anthropic's Messages API) and its answers back. What a
// provider needs returned unchanged (Anthropic's thinking signatures,
// OpenAI's encrypted reasoning and computer-call ids) rides along in the
// blocks that carry it, opaque to everything but the backend that made it.
//
// A conversation is the system text (Request.System) and messages that
// alternate, loosely, between the user and the assistant:
//   - a user message holds the task, the screen of each step (text and an
//     image), notes, and the results of the assistant's last tool calls
//     (ToolResult blocks, first);
//   - an assistant message holds reasoning, text and tool calls, in the
//     order the model produced them.
//
// Messages are JSON-serialisable as they are: the agent keeps its
// conversation on disk, step by step (without image data: Image.Data is
// not serialised, its File is).

// Role is who said a message.
type Role string

// Roles of messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// BlockType is what a block holds.
type BlockType string

// Block types.
const (
	BlockText       BlockType = "text"
	BlockImage      BlockType = "image"
	BlockToolCall   BlockType = "tool_call"
	BlockToolResult BlockType = "tool_result"
	BlockReasoning  BlockType = "reasoning"
)

// Block is one piece of a message: exactly one of its fields besides Type
// is set, the one Type names.
type Block struct {
	Type      BlockType   `json:"type"`
	Text      string      `json:"text,omitempty"`
	Image     *Image      `json:"image,omitempty"`
	Call      *ToolCall   `json:"call,omitempty"`
	Result    *ToolResult `json:"result,omitempty"`
	Reasoning *Reasoning  `json:"reasoning,omitempty"`

	// wasImage marks the note that stands in for an image left out of a
	// request (Window): chat sends it where the image was, as a part.
	wasImage bool
}

// Text is a text block.
func Text(s string) Block { return Block{Type: BlockText, Text: s} }

// ImageBlock is an image block.
func ImageBlock(img *Image) Block { return Block{Type: BlockImage, Image: img} }

// Image is a picture for the model: a screenshot, as it is sent.
type Image struct {
	// MediaType is image/png or image/jpeg.
	MediaType string `json:"mediaType"`
	// Width and Height are its pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// Data is the encoded image in base64 (the form every provider takes).
	// It is not serialised: File says where the picture is kept.
	Data string `json:"-"`
	// File, when set, is the screenshot's file in the task's session (what
	// the user saw of this step), relative to the session folder.
	File string `json:"file,omitempty"`

	// url memoises DataURL: an image is sent with several requests.
	url string
}

// DataURL is the image as a data: URL.
func (i *Image) DataURL() string {
	if i.url == "" {
		i.url = "data:" + i.MediaType + ";base64," + i.Data
	}
	return i.url
}

// ToolCall is a tool the model asked to run.
type ToolCall struct {
	// ID is the call's id, which its result names.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args are the arguments as the model wrote them (a JSON object). For
	// a native computer call they are the provider's action object, kept
	// to be sent back unchanged.
	Args json.RawMessage `json:"args"`
	// Native names the provider whose own computer tool made the call
	// (NativeAnthropic, NativeOpenAI); "" for a function tool. Action is
	// the call in neutral form (computer.go).
	Native string  `json:"native,omitempty"`
	Action *Action `json:"action,omitempty"`
	// Invalid, for a native call, says why its action could not be read
	// (Action is nil): the model is told so.
	Invalid string `json:"invalid,omitempty"`
	// ItemID is the provider's id of the output item (OpenAI's
	// computer_call id), sent back with it.
	ItemID string `json:"itemId,omitempty"`
	// SafetyChecks are the checks the provider raised on the call
	// (OpenAI's pending_safety_checks): the user must approve each before
	// the call runs, and the result acknowledges them.
	SafetyChecks []SafetyCheck `json:"safetyChecks,omitempty"`
}

// Native computer tools.
const (
	NativeAnthropic = "anthropic"
	NativeOpenAI    = "openai"
)

// reasoningShown marks reasoning that is only shown (a stream's summary
// that the answer's items left out): it goes back to no provider.
const reasoningShown = "shown"

// SafetyCheck is a provider's safety check on a computer action.
type SafetyCheck struct {
	ID      string `json:"id"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// ToolResult is what a tool call came to.
type ToolResult struct {
	CallID string `json:"callId"`
	// Native is the call's (a native computer call's result goes back in
	// the provider's own form).
	Native string `json:"native,omitempty"`
	// Content is text and images.
	Content []Block `json:"content"`
	IsError bool    `json:"isError,omitempty"`
	// Acknowledged are the call's safety checks the user approved.
	Acknowledged []SafetyCheck `json:"acknowledged,omitempty"`
}

// Text returns the result's text blocks, joined.
func (r *ToolResult) Text() string { return joinText(r.Content) }

// Reasoning is the model's thinking, as its provider returns it.
type Reasoning struct {
	// Provider is the backend that made it (NativeAnthropic, NativeOpenAI,
	// or "chat"); it goes back only to the same kind of backend, and is
	// left out of a request to another.
	Provider string `json:"provider"`
	// Text is the thinking, or its summary, as the user may read it.
	Text string `json:"text,omitempty"`
	// Signature is Anthropic's signature of a thinking block.
	Signature string `json:"signature,omitempty"`
	// Redacted is the data of Anthropic's redacted_thinking block.
	Redacted string `json:"redacted,omitempty"`
	// ID and Encrypted are an OpenAI reasoning item's id and its
	// encrypted_content (stateless requests send it back).
	ID        string `json:"id,omitempty"`
	Encrypted string `json:"encrypted,omitempty"`
	// Summary are the item's summary parts (OpenAI), kept apart to go back
	// as they came.
	Summary []string `json:"summary,omitempty"`
}

// UserMessage is a user message of blocks.
func UserMessage(blocks ...Block) Message { return Message{Role: RoleUser, Content: blocks} }

// UserText is a user message of one text.
func UserText(s string) Message { return UserMessage(Text(s)) }

// AssistantText is an assistant message of one text.
func AssistantText(s string) Message { return Message{Role: RoleAssistant, Content: []Block{Text(s)}} }

// ResultBlock is a tool result block with text.
func ResultBlock(call ToolCall, text string, isError bool) Block {
	return Block{Type: BlockToolResult, Result: &ToolResult{CallID: call.ID, Native: call.Native, Content: []Block{Text(text)}, IsError: isError}}
}

// TextOf returns the message's text blocks, joined.
func (m Message) TextOf() string { return joinText(m.Content) }

// Calls returns the message's tool calls, in order.
func (m Message) Calls() []ToolCall {
	var out []ToolCall
	for _, b := range m.Content {
		if b.Type == BlockToolCall && b.Call != nil {
			out = append(out, *b.Call)
		}
	}
	return out
}

// HasImage reports whether the message shows an image (in a tool result
// too).
func (m Message) HasImage() bool {
	for _, b := range m.Content {
		switch {
		case b.Type == BlockImage:
			return true
		case b.Type == BlockToolResult && b.Result != nil:
			for _, c := range b.Result.Content {
				if c.Type == BlockImage {
					return true
				}
			}
		}
	}
	return false
}

func joinText(blocks []Block) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == BlockText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Usage is the tokens a call used.
type Usage struct {
	// Prompt is every input token, those read from or written to a prompt
	// cache included.
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
	Total      int `json:"total"`
	// CacheRead are the prompt tokens read from the provider's prompt
	// cache; CacheWrite those written to it (Anthropic bills writes).
	CacheRead  int `json:"cacheRead,omitempty"`
	CacheWrite int `json:"cacheWrite,omitempty"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.Prompt + v.Prompt, u.Completion + v.Completion, u.Total + v.Total, u.CacheRead + v.CacheRead, u.CacheWrite + v.CacheWrite}
}

// Notes that stand in for what normalize repairs.
const (
	noResultNote      = "No result was recorded for this call (the helper stopped while it ran, or it was not made): look at the screen to see what happened."
	earlierResultNote = "The result of an earlier tool call, whose call is no longer in the conversation:"
)

// normalize returns messages in the shape every protocol requires of tool
// calls: each assistant message's calls are answered, first thing, by the
// user message right after it, and a result answers only a call of the
// assistant message right before it. A call without a result (a helper
// that stopped mid-step, a resumed task) gets one that says so; a result
// whose call is gone (the history before it was condensed) becomes words.
// messages is not modified; a conversation that needs nothing is returned
// as it is.
func normalize(messages []Message) []Message {
	var out []Message
	changed := func(i int) {
		if out == nil {
			out = append(make([]Message, 0, len(messages)+1), messages[:i]...)
		}
	}
	for i := 0; i < len(messages); i++ {
		m := messages[i]
		if m.Role == RoleUser {
			var calls []ToolCall
			if i > 0 && messages[i-1].Role == RoleAssistant {
				calls = messages[i-1].Calls()
			}
			if fixed, ok := answerCalls(m, calls); !ok {
				changed(i)
				m = fixed
			}
		}
		if out != nil {
			out = append(out, m)
		}
		if m.Role == RoleAssistant && len(m.Calls()) > 0 && (i+1 == len(messages) || messages[i+1].Role != RoleUser) {
			// Nothing answers these calls: a user message that does.
			changed(i + 1)
			fixed, _ := answerCalls(UserMessage(), m.Calls())
			out = append(out, fixed)
		}
	}
	if out == nil {
		return messages
	}
	return out
}

// answerCalls returns m with results for exactly calls, first: missing
// ones made up, others turned into words; ok says m was so already.
func answerCalls(m Message, calls []ToolCall) (Message, bool) {
	want := make(map[string]bool, len(calls))
	for _, c := range calls {
		want[c.ID] = true
	}
	var results, rest []Block
	have := map[string]bool{}
	ok, seenOther := true, false
	for _, b := range m.Content {
		if b.Type != BlockToolResult {
			rest = append(rest, b)
			seenOther = true
			continue
		}
		if !want[b.Result.CallID] || have[b.Result.CallID] {
			ok = false
			rest = append(rest, Text(earlierResultNote+" "+b.Result.Text()))
			for _, c := range b.Result.Content {
				if c.Type == BlockImage {
					rest = append(rest, c)
				}
			}
			continue
		}
		if seenOther {
			ok = false // results come first
		}
		have[b.Result.CallID] = true
		results = append(results, b)
	}
	for _, c := range calls {
		if !have[c.ID] {
			ok = false
			results = append(results, ResultBlock(c, noResultNote, true))
		}
	}
	if ok {
		return m, true
	}
	return Message{Role: RoleUser, Content: append(results, rest...)}, false
}
