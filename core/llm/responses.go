package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// The Responses API backend (a provider's backendMode "responses"): what
// OpenAI's current reasoning and computer-use models are served by. The
// agent keeps its conversation as chat messages; this file turns a chat
// request into a Responses request (go-openai's CreateResponseRequest and
// input item shapes) and the answer back into a chat completion, so the
// rest of the client (retries, context management, the completion check)
// is the same for both backends.
//
// Requests are stateless (store: false): the whole conversation is sent
// each turn, as for Chat Completions, so screenshots are not kept by the
// provider and condensing the history works the same. The model's own
// reasoning items are not sent back; its reasoning summaries are shown to
// the user as they stream.

// Backends a provider may use.
const (
	BackendChatCompletions = "chat_completions"
	BackendResponses       = "responses"
)

// responsesRequest is req as a Responses API request.
func (c *Client) responsesRequest(req openai.ChatCompletionRequest, stream bool) (openai.CreateResponseRequest, error) {
	store := false
	out := openai.CreateResponseRequest{Model: req.Model, Store: &store, Stream: stream}
	input := make([]any, 0, len(req.Messages))
	for i, m := range req.Messages {
		items, err := responsesItems(m)
		if err != nil {
			return out, fmt.Errorf("message %d: %w", i, err)
		}
		input = append(input, items...)
	}
	out.Input = input
	for _, t := range req.Tools {
		if t.Function == nil {
			continue
		}
		// Function tools are strict by default in the Responses API, which
		// needs every property required; the agent's tools have optional
		// ones, so strict is off as it is for Chat Completions.
		p := map[string]any{"name": t.Function.Name, "parameters": t.Function.Parameters, "strict": t.Function.Strict}
		if t.Function.Description != "" {
			p["description"] = t.Function.Description
		}
		out.Tools = append(out.Tools, openai.ResponseTool{Type: openai.ToolTypeFunction, Parameters: p})
	}
	if req.ReasoningEffort != "" {
		out.Reasoning = &openai.ResponseReasoning{Effort: req.ReasoningEffort, Summary: "auto"}
	}
	// A bounded answer (a title) stays bounded; the Responses API takes no
	// bound under 16.
	if req.MaxTokens > 0 {
		out.MaxOutputTokens = max(req.MaxTokens, 16)
	}
	if f := req.ResponseFormat; f != nil && f.JSONSchema != nil {
		out.Text = &openai.ResponseTextConfig{Format: &openai.ResponseTextFormat{Type: "json_schema",
			Name: f.JSONSchema.Name, Schema: f.JSONSchema.Schema, Strict: f.JSONSchema.Strict}}
	}
	return out, nil
}

// responsesItems is one chat message as Responses input items.
func responsesItems(m openai.ChatCompletionMessage) ([]any, error) {
	switch m.Role {
	case openai.ChatMessageRoleSystem, openai.ChatMessageRoleDeveloper, openai.ChatMessageRoleUser:
		if len(m.MultiContent) == 0 {
			return []any{openai.ResponseInputMessage{Type: "message", Role: m.Role, Content: m.Content}}, nil
		}
		parts := make([]any, 0, len(m.MultiContent))
		for _, p := range m.MultiContent {
			switch {
			case p.Type == openai.ChatMessagePartTypeText:
				parts = append(parts, openai.ResponseInputText{Type: "input_text", Text: p.Text})
			case p.Type == openai.ChatMessagePartTypeImageURL && p.ImageURL != nil:
				parts = append(parts, openai.ResponseInputImage{Type: "input_image", ImageURL: p.ImageURL.URL, Detail: string(cmp.Or(p.ImageURL.Detail, openai.ImageURLDetailAuto))})
			default:
				return nil, fmt.Errorf("a %s message part of type %q has no Responses form", m.Role, p.Type)
			}
		}
		return []any{openai.ResponseInputMessage{Type: "message", Role: m.Role, Content: parts}}, nil
	case openai.ChatMessageRoleAssistant:
		var items []any
		if m.Content != "" {
			items = append(items, openai.ResponseInputMessage{Type: "message", Role: m.Role, Content: m.Content})
		}
		for _, tc := range m.ToolCalls {
			items = append(items, openai.ResponseOutputItem{Type: "function_call", CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		return items, nil
	case openai.ChatMessageRoleTool:
		out := m.Content
		for _, p := range m.MultiContent {
			out += p.Text
		}
		return []any{openai.ResponseFunctionCallOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: out}}, nil
	}
	return nil, fmt.Errorf("role %q has no Responses form", m.Role)
}

// responsesAnswer is the part of a Responses answer the client reads.
type responsesAnswer struct {
	Status            openai.ResponseStatus             `json:"status"`
	Error             *openai.ResponseError             `json:"error"`
	IncompleteDetails *openai.ResponseIncompleteDetails `json:"incomplete_details"`
	Output            []openai.ResponseOutputItem       `json:"output"`
	Usage             *openai.ResponseUsage             `json:"usage"`
}

// chat is the answer as a chat completion. Reasoning summaries and
// reasoning text become the message's reasoning.
func (a responsesAnswer) chat(streamedReasoning string) (openai.ChatCompletionResponse, error) {
	if a.Status == openai.ResponseStatusFailed || a.Error != nil {
		code, msg := "", ""
		if a.Error != nil {
			code, msg = a.Error.Code, a.Error.Message
		}
		return openai.ChatCompletionResponse{}, streamError(orNil(code), "", msg)
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	var text, reasoning, refusal strings.Builder
	for _, it := range a.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				text.WriteString(p.Text)
				refusal.WriteString(p.Refusal)
			}
		case "function_call":
			args := it.Arguments
			msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: it.CallID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: it.Name, Arguments: args}})
		case "reasoning":
			for _, s := range it.Summary {
				reasoning.WriteString(s.Text)
			}
			for _, p := range it.Content {
				reasoning.WriteString(p.Text)
			}
		}
	}
	msg.Content, msg.Refusal = text.String(), refusal.String()
	msg.ReasoningContent = reasoning.String()
	if msg.ReasoningContent == "" {
		msg.ReasoningContent = streamedReasoning
	}
	finish := openai.FinishReasonStop
	switch {
	case len(msg.ToolCalls) > 0:
		finish = openai.FinishReasonToolCalls
	case a.Status == openai.ResponseStatusIncomplete && a.IncompleteDetails != nil && a.IncompleteDetails.Reason == "content_filter":
		finish = openai.FinishReasonContentFilter
	case a.Status == openai.ResponseStatusIncomplete:
		finish = openai.FinishReasonLength
	}
	var u openai.Usage
	if a.Usage != nil {
		u = openai.Usage{PromptTokens: a.Usage.InputTokens, CompletionTokens: a.Usage.OutputTokens, TotalTokens: a.Usage.TotalTokens}
	}
	if len(a.Output) == 0 {
		return openai.ChatCompletionResponse{Usage: u}, nil // no output: a hiccup, asked again
	}
	return openai.ChatCompletionResponse{Object: "chat.completion", Usage: u,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: finish}}}, nil
}

func orNil(code string) any {
	if code == "" {
		return nil
	}
	return code
}

// responsesStream gathers a streamed Responses answer.
type responsesStream struct {
	onDelta   func(Delta)
	reasoning strings.Builder
	// items are the output items done so far, in output order; final is
	// the whole answer of the terminal event.
	items []openai.ResponseOutputItem
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
	var e openai.ResponseStreamEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return false, fmt.Errorf("a stream event is not a Responses event: %w", err)
	}
	switch e.Type {
	case openai.ResponseStreamEventOutputTextDelta:
		if s.onDelta != nil {
			s.onDelta(Delta{Text: e.Delta})
		}
	case openai.ResponseStreamEventReasoningSummaryTextDelta, openai.ResponseStreamEventReasoningTextDelta:
		s.reasoning.WriteString(e.Delta)
		if s.onDelta != nil {
			s.onDelta(Delta{Reasoning: e.Delta})
		}
	case openai.ResponseStreamEventReasoningSummaryPartDone:
		s.reasoning.WriteString("\n\n")
	case openai.ResponseStreamEventOutputItemDone:
		if e.Item != nil {
			s.items = append(s.items, *e.Item)
		}
	case openai.ResponseStreamEventCompleted, openai.ResponseStreamEventIncomplete, openai.ResponseStreamEventFailed:
		var whole struct {
			Response responsesAnswer `json:"response"`
		}
		if err := json.Unmarshal(data, &whole); err != nil {
			return false, fmt.Errorf("the %s event: %w", e.Type, err)
		}
		s.final = &whole.Response
		return true, nil
	case openai.ResponseStreamEventError:
		return false, streamError(orNil(e.Code), "", e.Message)
	}
	return false, nil
}

// response is the chat completion the stream stood for.
func (s *responsesStream) response() (openai.ChatCompletionResponse, error) {
	if s.final == nil {
		return openai.ChatCompletionResponse{}, errIncomplete
	}
	a := *s.final
	if len(a.Output) == 0 {
		a.Output = s.items // the terminal event may leave the output out
	}
	return a.chat(strings.TrimSpace(s.reasoning.String()))
}
