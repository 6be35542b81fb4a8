package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"
)

// The Chat Completions backend: OpenAI's chat protocol, which every
// OpenAI-compatible endpoint speaks. The neutral conversation maps onto
// chat messages one for one: a user message's tool results become tool
// messages (first), the rest of it one user message (text, or text and
// image parts); an assistant message its content, reasoning_content and
// function tool calls. Requests are marshaled by chatBody (wire.go), which
// reuses the JSON of what the previous request sent.

// chatBackend speaks Chat Completions.
type chatBackend struct {
	c    *Client
	wire wireCache
}

func newChat(c *Client) *chatBackend { return &chatBackend{c: c} }

func (b *chatBackend) native() string { return "" }

// reasoningChat marks reasoning that came as a chat message's
// reasoning_content: it goes back the same way, as before types existed.
const reasoningChat = "chat"

func (b *chatBackend) send(ctx context.Context, req *Request, onDelta func(Delta)) (Reply, error) {
	cr := openai.ChatCompletionRequest{Model: b.c.cfg.Model, Messages: chatMessages(req), MaxTokens: req.MaxTokens}
	if !req.verdict {
		// The completion check answers in its schema, with no tool to call.
		cr.Tools = chatTools(req.Tools)
	}
	if !req.NoReasoning {
		cr.ReasoningEffort = b.c.cfg.ReasoningEffort
	}
	if req.verdict {
		schema, err := jsonschema.GenerateSchemaForType(Verdict{})
		if err != nil {
			return Reply{}, &Error{Message: "verdict schema: " + err.Error()}
		}
		cr.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: verdictTool, Schema: schema, Strict: true},
		}
	}
	stream := onDelta != nil
	if stream {
		cr.Stream, cr.StreamOptions = true, &openai.StreamOptions{IncludeUsage: true}
	}
	body, err := b.chatBody(cr)
	if err != nil {
		return Reply{}, &Error{Message: "marshal the request: " + err.Error()}
	}
	var resp openai.ChatCompletionResponse
	answer := &chatAnswer{resp: &resp}
	if stream {
		resp, err = b.postStream(ctx, body, onDelta, answer)
	} else {
		_, err = b.c.post(ctx, "/chat/completions", body, answer, nil)
	}
	if err != nil {
		return Reply{}, err
	}
	if len(resp.Choices) == 0 {
		if p := protocolOf(answer.probe); p != "" && p != "OpenAI chat completions" {
			return Reply{}, wrongProtocol(b.c.cfg.Type, p)
		}
		return Reply{}, errNoChoices // a hiccup: asked again, with backoff
	}
	if resp.Choices[0].FinishReason == openai.FinishReasonContentFilter {
		// Not a completed answer, whatever text came with it; asking again
		// the same way gets the same.
		return Reply{}, &Error{Message: "the provider's content filter stopped the model's answer (finish_reason content_filter)"}
	}
	return chatReply(resp.Choices[0], resp.Usage), nil
}

// postStream sends a streamed request and gathers its answer. The stream
// is broken off when it goes quiet for the client's timeout.
func (b *chatBackend) postStream(ctx context.Context, body body, onDelta func(Delta), plain *chatAnswer) (openai.ChatCompletionResponse, error) {
	s := &chatStream{onDelta: onDelta, typ: b.c.cfg.Type}
	streamed, err := b.c.postWatched(ctx, "/chat/completions", body, plain, s.event)
	if err != nil || !streamed {
		return *plain.resp, err
	}
	return s.response()
}

// chatAnswer decodes a chat completion, noting what protocol an answer
// that is not one is in.
type chatAnswer struct {
	resp  *openai.ChatCompletionResponse
	probe answerProbe
}

func (a *chatAnswer) UnmarshalJSON(data []byte) error {
	json.Unmarshal(data, &a.probe)
	return json.Unmarshal(data, a.resp)
}

// chatReply is a chat answer in neutral form.
func chatReply(ch openai.ChatCompletionChoice, u openai.Usage) Reply {
	msg := ch.Message
	var blocks []Block
	if msg.ReasoningContent != "" {
		blocks = append(blocks, Block{Type: BlockReasoning, Reasoning: &Reasoning{Provider: reasoningChat, Text: msg.ReasoningContent}})
	}
	if text := msg.Content + msg.Refusal; text != "" {
		blocks = append(blocks, Text(text))
	}
	for _, tc := range msg.ToolCalls {
		blocks = append(blocks, Block{Type: BlockToolCall, Call: &ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)}})
	}
	stop := ""
	if ch.FinishReason == openai.FinishReasonLength {
		stop = StopLength
	}
	return newReply(Message{Role: RoleAssistant, Content: blocks}, chatUsage(u), stop)
}

func chatUsage(u openai.Usage) Usage {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	out := Usage{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Total: total}
	if u.PromptTokensDetails != nil {
		out.CacheRead = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// chatTools are function tools in chat form.
func chatTools(tools []Tool) []openai.Tool {
	if len(tools) == 0 {
		return nil
	}
	out := make([]openai.Tool, len(tools))
	for i, t := range tools {
		out[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
	}
	return out
}

// chatMessages is a request's conversation as chat messages.
func chatMessages(req *Request) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, 0, len(req.Messages)+4)
	if req.System != "" {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.System})
	}
	for _, m := range normalize(req.Messages) {
		if m.Role == RoleAssistant {
			out = append(out, chatAssistant(m))
			continue
		}
		var rest []Block
		for _, b := range m.Content {
			if b.Type != BlockToolResult {
				rest = append(rest, b)
				continue
			}
			var text []string
			for _, c := range b.Result.Content {
				if c.Type == BlockImage {
					rest = append(rest, c) // a tool message holds text only
				} else if c.Text != "" {
					text = append(text, c.Text)
				}
			}
			out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: b.Result.CallID, Content: strings.Join(text, "\n")})
		}
		if len(rest) > 0 {
			out = append(out, chatUser(rest))
		}
	}
	return out
}

// chatUser is user blocks as one message: text content alone, or parts
// when it shows (or showed: a note in an image's place) an image.
func chatUser(blocks []Block) openai.ChatCompletionMessage {
	pictured := false
	for _, b := range blocks {
		pictured = pictured || b.Type == BlockImage || b.wasImage
	}
	if !pictured {
		return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: joinText(blocks)}
	}
	parts := make([]openai.ChatMessagePart, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case BlockImage:
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: b.Image.DataURL(), Detail: openai.ImageURLDetailHigh}})
		case BlockText:
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: b.Text})
		}
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, MultiContent: parts}
}

// chatAssistant is an assistant message in chat form; reasoning of other
// backends is left out.
func chatAssistant(m Message) openai.ChatCompletionMessage {
	out := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	var text, reasoning []string
	for _, b := range m.Content {
		switch b.Type {
		case BlockText:
			text = append(text, b.Text)
		case BlockReasoning:
			if b.Reasoning.Provider == reasoningChat {
				reasoning = append(reasoning, b.Reasoning.Text)
			}
		case BlockToolCall:
			out.ToolCalls = append(out.ToolCalls, openai.ToolCall{ID: b.Call.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: b.Call.Name, Arguments: string(b.Call.Args)}})
		}
	}
	out.Content, out.ReasoningContent = strings.Join(text, ""), strings.Join(reasoning, "")
	return out
}

// models lists an OpenAI-compatible provider's models (models.go).
func (b *chatBackend) models(ctx context.Context) ([]ModelInfo, error) { return b.c.openAIModels(ctx) }

var _ backend = (*chatBackend)(nil)

// errAnswerShape is an answer that is not in the protocol's shape.
func errAnswerShape(what string, err error) error {
	return fmt.Errorf("the answer is not a %s: %w", what, err)
}
