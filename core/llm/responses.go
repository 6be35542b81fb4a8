package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// The Responses API backend: OpenAI's own API (TypeOpenAI uses it by
// default), and an OpenAI-compatible provider's with backendMode
// "responses". The request envelope is go-openai's CreateResponseRequest;
// the input and output items go-openai leaves untyped (computer calls and
// their actions, safety checks, encrypted reasoning) are typed here from
// OpenAI's documented schema.
//
// Requests are stateless (store: false): the whole conversation is sent
// each turn, so screenshots are not kept by the provider, the image window
// and condensing the history work as for every backend, and a task resumed
// after a restart needs nothing of OpenAI's. For TypeOpenAI the model's
// reasoning items come back with their encrypted_content (include
// "reasoning.encrypted_content") and go back in the next request before
// the calls they led to, with the output items' ids: OpenAI requires a
// computer_call to come with its reasoning, and it is what previous_response_id
// would have carried, without keeping the conversation on OpenAI's side.
// An OpenAI-compatible provider's requests stay as they were before
// types existed: its reasoning is shown, not sent back.
//
// computer-use-preview (a model whose id starts with "computer-use")
// answers only with computer_call items: it is offered the
// computer_use_preview tool with the declared display and `truncation:
// "auto"`, and each computer_call is answered with a computer_call_output
// holding the screenshot after the action and the safety checks the user
// acknowledged. A native call whose screenshot the image window left out
// goes back as words (its action, and that the screenshot is omitted),
// since a computer_call_output must hold one.

// Backends a provider may use.
const (
	BackendChatCompletions = "chat_completions"
	BackendResponses       = "responses"
)

type responsesBackend struct{ c *Client }

func newResponses(c *Client) *responsesBackend { return &responsesBackend{c: c} }

// computerUseModel says a model is OpenAI's computer-use model.
func computerUseModel(model string) bool {
	id := strings.ToLower(model[strings.LastIndex(model, "/")+1:])
	return strings.HasPrefix(id, "computer-use")
}

func (b *responsesBackend) native() string {
	if b.c.cfg.Type == TypeOpenAI && computerUseModel(b.c.cfg.Model) {
		return NativeOpenAI
	}
	return ""
}

// stateless says reasoning and item ids go back (TypeOpenAI).
func (b *responsesBackend) stateless() bool { return b.c.cfg.Type == TypeOpenAI }

// Input items go-openai does not type.
type (
	rsReasoning struct {
		Type             string      `json:"type"`
		ID               string      `json:"id"`
		Summary          []rsSummary `json:"summary"`
		EncryptedContent string      `json:"encrypted_content,omitempty"`
	}
	rsSummary struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	rsFunctionCall struct {
		Type      string `json:"type"`
		ID        string `json:"id,omitempty"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	rsComputerCall struct {
		Type                string          `json:"type"`
		ID                  string          `json:"id"`
		CallID              string          `json:"call_id"`
		Action              json.RawMessage `json:"action"`
		PendingSafetyChecks []SafetyCheck   `json:"pending_safety_checks"`
		Status              string          `json:"status"`
	}
	rsComputerOutput struct {
		Type                     string        `json:"type"`
		CallID                   string        `json:"call_id"`
		Output                   rsScreenshot  `json:"output"`
		AcknowledgedSafetyChecks []SafetyCheck `json:"acknowledged_safety_checks,omitempty"`
	}
	rsScreenshot struct {
		Type     string `json:"type"`
		ImageURL string `json:"image_url"`
	}
)

// request is req as a Responses API request.
func (b *responsesBackend) request(req *Request, stream bool) (openai.CreateResponseRequest, error) {
	cfg := b.c.cfg
	store := false
	out := openai.CreateResponseRequest{Model: cfg.Model, Store: &store, Stream: stream}
	input, err := b.input(req)
	if err != nil {
		return out, err
	}
	out.Input = input
	tools := req.Tools
	if req.verdict {
		tools = nil // the completion check answers in words or its schema
	}
	for _, t := range tools {
		// Function tools are strict by default in the Responses API, which
		// needs every property required; the agent's tools have optional
		// ones, so strict is off as it is for Chat Completions.
		p := map[string]any{"name": t.Name, "parameters": t.Parameters, "strict": false}
		if t.Description != "" {
			p["description"] = t.Description
		}
		out.Tools = append(out.Tools, openai.ResponseTool{Type: openai.ToolTypeFunction, Parameters: p})
	}
	cua := computerUseModel(cfg.Model) && b.native() != ""
	if cua {
		d := Display{Width: 1280, Height: 800, OS: "linux"}
		if req.Computer != nil {
			d = *req.Computer
		}
		env := "linux"
		if d.OS == "macos" {
			env = "mac"
		}
		out.Tools = append(out.Tools, openai.ResponseTool{Type: "computer_use_preview",
			Parameters: map[string]any{"display_width": d.Width, "display_height": d.Height, "environment": env}})
		out.Truncation = openai.ResponseTruncationAuto
	}
	effort := cfg.ReasoningEffort
	if req.NoReasoning {
		effort = ""
	}
	switch {
	case cua:
		// The computer-use model reasons by itself; its summaries are
		// shown to the user.
		out.Reasoning = &openai.ResponseReasoning{Effort: effort, Summary: "concise"}
	case effort != "":
		out.Reasoning = &openai.ResponseReasoning{Effort: effort, Summary: "auto"}
	}
	if b.stateless() && out.Reasoning != nil {
		out.Include = []openai.ResponseInclude{openai.ResponseIncludeReasoningEncryptedContent}
	}
	// A bounded answer (a title) stays bounded; the Responses API takes no
	// bound under 16.
	if req.MaxTokens > 0 {
		out.MaxOutputTokens = max(req.MaxTokens, 16)
	}
	if req.verdict {
		if cua {
			// The computer-use model takes no output schema: it is asked
			// in words, and its answer read as JSON.
			input = append(input, openai.ResponseInputMessage{Type: "message", Role: "user",
				Content: `Answer with only a JSON object {"success": true or false, "summary": "..."}, without calling a tool.`})
			out.Input = input
		} else {
			var schema any = json.RawMessage(verdictSchema)
			out.Text = &openai.ResponseTextConfig{Format: &openai.ResponseTextFormat{Type: "json_schema", Name: verdictTool, Schema: schema, Strict: true}}
		}
	}
	return out, nil
}

// input is the conversation as Responses input items.
func (b *responsesBackend) input(req *Request) ([]any, error) {
	items := make([]any, 0, 2*len(req.Messages)+1)
	if req.System != "" {
		items = append(items, openai.ResponseInputMessage{Type: "message", Role: openai.ChatMessageRoleSystem, Content: req.System})
	}
	// Native calls whose result holds no screenshot (the image window left
	// it out) go back as words.
	msgs := normalize(req.Messages)
	pictured := map[string]bool{}
	for _, m := range msgs {
		for _, bl := range m.Content {
			if bl.Type == BlockToolResult && bl.Result.Native == NativeOpenAI && resultImage(bl.Result) != nil {
				pictured[bl.Result.CallID] = true
			}
		}
	}
	for i, m := range msgs {
		var err error
		if m.Role == RoleAssistant {
			items, err = b.assistantItems(items, m, pictured)
		} else {
			items, err = b.userItems(items, m, pictured)
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return items, nil
}

// resultImage is the screenshot a native call's result holds, or nil.
func resultImage(r *ToolResult) *Image {
	for _, c := range r.Content {
		if c.Type == BlockImage {
			return c.Image
		}
	}
	return nil
}

func (b *responsesBackend) assistantItems(items []any, m Message, pictured map[string]bool) ([]any, error) {
	// Reasoning goes back only with what it led to: a turn whose native
	// call goes back as words loses its reasoning.
	keepReasoning := b.stateless()
	for _, bl := range m.Content {
		if bl.Type == BlockToolCall && bl.Call.Native == NativeOpenAI && !pictured[bl.Call.ID] {
			keepReasoning = false
		}
	}
	var text []string
	flush := func() {
		if len(text) > 0 {
			items = append(items, openai.ResponseInputMessage{Type: "message", Role: openai.ChatMessageRoleAssistant, Content: strings.Join(text, "")})
			text = nil
		}
	}
	for _, bl := range m.Content {
		switch bl.Type {
		case BlockText:
			text = append(text, bl.Text)
		case BlockReasoning:
			r := bl.Reasoning
			if !keepReasoning || r.Provider != NativeOpenAI || r.ID == "" || r.Encrypted == "" {
				continue
			}
			flush()
			item := rsReasoning{Type: "reasoning", ID: r.ID, Summary: []rsSummary{}, EncryptedContent: r.Encrypted}
			for _, s := range r.Summary {
				item.Summary = append(item.Summary, rsSummary{Type: "summary_text", Text: s})
			}
			items = append(items, item)
		case BlockToolCall:
			flush()
			c := bl.Call
			switch {
			case c.Native == NativeOpenAI && pictured[c.ID]:
				checks := c.SafetyChecks
				if checks == nil {
					checks = []SafetyCheck{}
				}
				items = append(items, rsComputerCall{Type: "computer_call", ID: c.ItemID, CallID: c.ID, Action: c.Args, PendingSafetyChecks: checks, Status: "completed"})
			case c.Native == NativeOpenAI:
				text = append(text, fmt.Sprintf("[computer action %s]", compactJSON(c.Args)))
			default:
				fc := rsFunctionCall{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: string(c.Args)}
				if keepReasoning {
					fc.ID = c.ItemID
				}
				items = append(items, fc)
			}
		}
	}
	flush()
	return items, nil
}

func (b *responsesBackend) userItems(items []any, m Message, pictured map[string]bool) ([]any, error) {
	var parts, resultImages []any
	var notes []string
	for _, bl := range m.Content {
		switch bl.Type {
		case BlockToolResult:
			r := bl.Result
			if r.Native == NativeOpenAI && pictured[r.CallID] {
				items = append(items, rsComputerOutput{Type: "computer_call_output", CallID: r.CallID,
					Output:                   rsScreenshot{Type: "computer_screenshot", ImageURL: resultImage(r).DataURL()},
					AcknowledgedSafetyChecks: r.Acknowledged})
				if t := r.Text(); t != "" {
					notes = append(notes, "The computer action's result: "+t)
				}
				continue
			}
			out := r.Text()
			if r.Native == NativeOpenAI {
				notes = append(notes, "The computer action's result (its screenshot is omitted to keep the conversation short): "+out)
				continue
			}
			items = append(items, openai.ResponseFunctionCallOutput{Type: "function_call_output", CallID: r.CallID, Output: out})
			// A function's output is text: its images (an image file
			// read_file shows) go in the input message after the
			// outputs, as chat sends them after the tool messages.
			for _, c := range r.Content {
				if c.Type == BlockImage {
					resultImages = append(resultImages, openai.ResponseInputImage{Type: "input_image", ImageURL: c.Image.DataURL(), Detail: string(openai.ImageURLDetailHigh)})
				}
			}
		case BlockText:
			parts = append(parts, openai.ResponseInputText{Type: "input_text", Text: bl.Text})
		case BlockImage:
			parts = append(parts, openai.ResponseInputImage{Type: "input_image", ImageURL: bl.Image.DataURL(), Detail: string(openai.ImageURLDetailHigh)})
		}
	}
	for i := len(notes) - 1; i >= 0; i-- {
		parts = append([]any{openai.ResponseInputText{Type: "input_text", Text: notes[i]}}, parts...)
	}
	parts = append(resultImages, parts...)
	switch {
	case len(parts) == 0:
	case len(parts) == 1 && len(resultImages) == 0 && !hasImagePart(m):
		items = append(items, openai.ResponseInputMessage{Type: "message", Role: openai.ChatMessageRoleUser, Content: parts[0].(openai.ResponseInputText).Text})
	default:
		items = append(items, openai.ResponseInputMessage{Type: "message", Role: openai.ChatMessageRoleUser, Content: parts})
	}
	return items, nil
}

// hasImagePart says a user message shows an image outside tool results,
// or a note in one's place: it goes as parts, as chat sends it.
func hasImagePart(m Message) bool {
	for _, b := range m.Content {
		if b.Type == BlockImage || b.wasImage {
			return true
		}
	}
	return false
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return truncate(string(raw), 500)
	}
	return truncate(buf.String(), 500)
}

func (b *responsesBackend) send(ctx context.Context, req *Request, onDelta func(Delta)) (Reply, error) {
	rr, err := b.request(req, onDelta != nil)
	if err != nil {
		return Reply{}, &Error{Message: "the request has no Responses form: " + err.Error()}
	}
	data, err := json.Marshal(rr)
	if err != nil {
		return Reply{}, &Error{Message: "marshal the request: " + err.Error()}
	}
	var a responsesAnswer
	plain := &rsPlain{a: &a}
	if onDelta == nil {
		if _, err := b.c.post(ctx, "/responses", body{data}, plain, nil); err != nil {
			return Reply{}, err
		}
		return b.plainReply(plain)
	}
	s := &responsesStream{onDelta: onDelta, typ: b.c.cfg.Type}
	streamed, err := b.c.postWatched(ctx, "/responses", body{data}, plain, s.event)
	switch {
	case err != nil:
		return Reply{}, err
	case !streamed:
		return b.plainReply(plain)
	case s.final == nil:
		return Reply{}, errIncomplete
	}
	a = *s.final
	if len(a.Output) == 0 {
		a.Output = s.items // the terminal event may leave the output out
	}
	return b.reply(a, strings.TrimSpace(s.reasoning.String()))
}

// rsPlain decodes an answer that is not streamed, noting what protocol an
// answer that is not a response is in.
type rsPlain struct {
	a     *responsesAnswer
	probe answerProbe
}

func (p *rsPlain) UnmarshalJSON(data []byte) error {
	json.Unmarshal(data, &p.probe)
	return json.Unmarshal(data, p.a)
}

// plainReply is the reply of an answer that was not streamed.
func (b *responsesBackend) plainReply(p *rsPlain) (Reply, error) {
	if len(p.a.Output) == 0 && p.a.Status == "" {
		if proto := protocolOf(p.probe); proto != "" && proto != "OpenAI Responses" {
			return Reply{}, wrongProtocol(b.c.cfg.Type, proto)
		}
	}
	return b.reply(*p.a, "")
}

// rsItem is an output item.
type rsItem struct {
	ID                  string                         `json:"id"`
	Type                string                         `json:"type"`
	Status              string                         `json:"status"`
	Role                string                         `json:"role"`
	Content             []openai.ResponseOutputContent `json:"content"`
	CallID              string                         `json:"call_id"`
	Name                string                         `json:"name"`
	Arguments           string                         `json:"arguments"`
	Summary             []openai.ResponseSummaryPart   `json:"summary"`
	EncryptedContent    string                         `json:"encrypted_content"`
	Action              json.RawMessage                `json:"action"`
	PendingSafetyChecks []SafetyCheck                  `json:"pending_safety_checks"`
}

// responsesAnswer is the part of a Responses answer the client reads.
type responsesAnswer struct {
	Status            openai.ResponseStatus             `json:"status"`
	Error             *openai.ResponseError             `json:"error"`
	IncompleteDetails *openai.ResponseIncompleteDetails `json:"incomplete_details"`
	Output            []rsItem                          `json:"output"`
	Usage             *openai.ResponseUsage             `json:"usage"`
}

// reply is an answer in neutral form. Reasoning summaries and reasoning
// text are the reply's reasoning (streamed, when the items have none).
func (b *responsesBackend) reply(a responsesAnswer, streamedReasoning string) (Reply, error) {
	if a.Status == openai.ResponseStatusFailed || a.Error != nil {
		code, msg := "", ""
		if a.Error != nil {
			code, msg = a.Error.Code, a.Error.Message
		}
		return Reply{}, streamError(orNil(code), "", msg)
	}
	if len(a.Output) == 0 {
		return Reply{}, errNoChoices // no output: a hiccup, asked again
	}
	if a.Status == openai.ResponseStatusIncomplete && a.IncompleteDetails != nil && a.IncompleteDetails.Reason == "content_filter" {
		return Reply{}, &Error{Message: "the provider's content filter stopped the model's answer (incomplete: content_filter)"}
	}
	var blocks []Block
	var refused []string
	hasReasoning := false
	for _, it := range a.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				if p.Text != "" {
					blocks = append(blocks, Text(p.Text))
				}
				if p.Refusal != "" {
					refused = append(refused, p.Refusal)
				}
			}
		case "function_call":
			blocks = append(blocks, Block{Type: BlockToolCall, Call: &ToolCall{ID: it.CallID, ItemID: it.ID, Name: it.Name, Args: json.RawMessage(it.Arguments)}})
		case "computer_call":
			call := &ToolCall{ID: it.CallID, ItemID: it.ID, Name: ComputerTool, Args: it.Action, Native: NativeOpenAI, SafetyChecks: it.PendingSafetyChecks}
			action, err := ParseOpenAIAction(it.Action)
			if err != nil {
				call.Invalid = err.Error()
			}
			call.Action = action
			blocks = append(blocks, Block{Type: BlockToolCall, Call: call})
		case "reasoning":
			r := &Reasoning{Provider: NativeOpenAI, ID: it.ID, Encrypted: it.EncryptedContent}
			var text []string
			for _, s := range it.Summary {
				r.Summary = append(r.Summary, s.Text)
				text = append(text, s.Text)
			}
			for _, p := range it.Content {
				text = append(text, p.Text)
			}
			r.Text = strings.Join(text, "\n\n")
			hasReasoning = hasReasoning || r.Text != ""
			blocks = append(blocks, Block{Type: BlockReasoning, Reasoning: r})
		}
	}
	if !hasReasoning && streamedReasoning != "" {
		blocks = append([]Block{{Type: BlockReasoning, Reasoning: &Reasoning{Provider: reasoningShown, Text: streamedReasoning}}}, blocks...)
	}
	msg := Message{Role: RoleAssistant, Content: blocks}
	if len(refused) > 0 {
		if b.c.cfg.Type == TypeOpenAI && len(msg.Calls()) == 0 {
			return Reply{}, refusal("it answered with a refusal: " + truncate(strings.Join(refused, " "), 300))
		}
		msg.Content = append(msg.Content, Text(strings.Join(refused, " ")))
	}
	var u Usage
	if a.Usage != nil {
		u = Usage{Prompt: a.Usage.InputTokens, Completion: a.Usage.OutputTokens, Total: a.Usage.TotalTokens}
		if d := a.Usage.InputTokensDetails; d != nil {
			u.CacheRead = d.CachedTokens
		}
	}
	stop := ""
	if a.Status == openai.ResponseStatusIncomplete {
		stop = StopLength
	}
	return newReply(msg, u, stop), nil
}

func orNil(code string) any {
	if code == "" {
		return nil
	}
	return code
}

func (b *responsesBackend) models(ctx context.Context) ([]ModelInfo, error) {
	return b.c.openAIModels(ctx)
}

var _ backend = (*responsesBackend)(nil)

// rsEvent is a Responses stream event.
type rsEvent struct {
	Type    string  `json:"type"`
	Delta   string  `json:"delta"`
	Item    *rsItem `json:"item"`
	Code    any     `json:"code"`
	Message string  `json:"message"`
}

// responsesStream gathers a streamed Responses answer.
type responsesStream struct {
	onDelta func(Delta)
	// typ is the provider's type, for the error of a stream in another
	// protocol.
	typ       string
	reasoning strings.Builder
	// items are the output items done so far, in output order; final is
	// the whole answer of the terminal event.
	items []rsItem
	final *responsesAnswer
	size  int
}

func (s *responsesStream) event(data []byte) (bool, error) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return true, nil
	}
	s.size += len(data)
	if s.size > maxAnswerBytes {
		return false, fmt.Errorf("the answer is larger than %d MB", maxAnswerBytes>>20)
	}
	var e rsEvent
	if err := json.Unmarshal(data, &e); err != nil {
		var probe answerProbe
		if json.Unmarshal(data, &probe) == nil {
			if p := protocolOf(probe); p != "" && p != "OpenAI Responses" {
				return false, wrongProtocol(s.typ, p)
			}
		}
		return false, errAnswerShape("Responses event", err)
	}
	switch e.Type {
	case "response.output_text.delta":
		s.onDelta(Delta{Text: e.Delta})
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		s.reasoning.WriteString(e.Delta)
		s.onDelta(Delta{Reasoning: e.Delta})
	case "response.reasoning_summary_part.done":
		s.reasoning.WriteString("\n\n")
	case "response.output_item.done":
		if e.Item != nil {
			s.items = append(s.items, *e.Item)
		}
	case "response.completed", "response.incomplete", "response.failed":
		var whole struct {
			Response responsesAnswer `json:"response"`
		}
		if err := json.Unmarshal(data, &whole); err != nil {
			return false, fmt.Errorf("the %s event: %w", e.Type, err)
		}
		s.final = &whole.Response
		return true, nil
	case "error":
		code := e.Code
		if c, ok := code.(string); ok && c == "" {
			code = nil
		}
		return false, streamError(code, "", e.Message)
	default:
		if !strings.HasPrefix(e.Type, "response.") {
			var probe answerProbe
			json.Unmarshal(data, &probe)
			if p := protocolOf(probe); p != "" && p != "OpenAI Responses" {
				return false, wrongProtocol(s.typ, p)
			}
		}
	}
	return false, nil
}
