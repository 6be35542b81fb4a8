package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Usage is the tokens a call used.
type Usage struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
	Total      int `json:"total"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.Prompt + v.Prompt, u.Completion + v.Completion, u.Total + v.Total}
}

func usageOf(u openai.Usage) Usage {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return Usage{u.PromptTokens, u.CompletionTokens, total}
}

// ToolCall is one function call the model asked for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// Reply is the model's answer to one turn.
type Reply struct {
	// Message is the assistant message, to append to the conversation.
	Message openai.ChatCompletionMessage
	// Text is what the model said; ToolCalls what it asked to do, in order.
	Text      string
	ToolCalls []ToolCall
	// Reasoning is the model's reasoning (or its summary) when the
	// provider shows it.
	Reasoning string
	Usage     Usage
}

// Complete sends the conversation with the tools and returns the model's
// reply.
func (c *Client) Complete(ctx context.Context, messages []openai.ChatCompletionMessage, tools []openai.Tool) (Reply, error) {
	return c.CompleteStream(ctx, messages, tools, nil)
}

// CompleteStream is Complete with the answer streamed: onDelta, when set,
// hears the text and reasoning as they come (on the calling goroutine).
func (c *Client) CompleteStream(ctx context.Context, messages []openai.ChatCompletionMessage, tools []openai.Tool, onDelta func(Delta)) (Reply, error) {
	resp, err := c.create(ctx, openai.ChatCompletionRequest{Model: c.cfg.Model, Messages: messages, Tools: tools, ReasoningEffort: c.cfg.ReasoningEffort}, onDelta)
	if err != nil {
		return Reply{}, err
	}
	msg := resp.Choices[0].Message
	if msg.Role == "" {
		msg.Role = openai.ChatMessageRoleAssistant
	}
	r := Reply{Message: msg, Text: msg.Content, Reasoning: msg.ReasoningContent, Usage: usageOf(resp.Usage)}
	for _, tc := range msg.ToolCalls {
		args := json.RawMessage(tc.Function.Arguments)
		if len(strings.TrimSpace(tc.Function.Arguments)) == 0 {
			args = json.RawMessage("{}")
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	return r, nil
}

// create sends one request, with retries, to the provider's backend (Chat
// Completions, or Responses: see responses.go), streamed when onDelta is
// set; an answer without choices counts as a broken one.
func (c *Client) create(ctx context.Context, req openai.ChatCompletionRequest, onDelta func(Delta)) (openai.ChatCompletionResponse, error) {
	responses := c.cfg.Backend == BackendResponses
	stream := onDelta != nil
	path := "/chat/completions"
	var b body
	if responses {
		path = "/responses"
		rr, err := c.responsesRequest(req, stream)
		if err != nil {
			return openai.ChatCompletionResponse{}, fmt.Errorf("the request has no Responses form: %w", err)
		}
		data, err := json.Marshal(rr)
		if err != nil {
			return openai.ChatCompletionResponse{}, fmt.Errorf("marshal the request: %w", err)
		}
		b = body{data}
	} else {
		if stream {
			req.Stream, req.StreamOptions = true, &openai.StreamOptions{IncludeUsage: true}
		}
		var err error
		if b, err = c.chatBody(req); err != nil {
			return openai.ChatCompletionResponse{}, fmt.Errorf("marshal the request: %w", err)
		}
	}
	limit := c.cfg.Timeout
	if stream {
		limit *= streamSpan
	}
	var resp openai.ChatCompletionResponse
	err := c.doFor(ctx, limit, func(actx context.Context) error {
		var err error
		switch {
		case stream:
			onDelta(Delta{Restart: true})
			resp, err = c.postStream(actx, path, b, onDelta)
		case responses:
			var a responsesAnswer
			if _, err = c.post(actx, path, b, &a, nil); err == nil {
				resp, err = a.chat("")
			}
		default:
			resp = openai.ChatCompletionResponse{}
			_, err = c.post(actx, path, b, &resp, nil)
		}
		if err == nil && len(resp.Choices) == 0 {
			err = errNoChoices // a hiccup: asked again, with backoff
		}
		return err
	})
	if err == nil && resp.Choices[0].FinishReason == openai.FinishReasonContentFilter {
		// Not a completed answer, whatever text came with it; asking again
		// the same way gets the same.
		return resp, &Error{Attempts: 1, Message: "the provider's content filter stopped the model's answer (finish_reason content_filter)"}
	}
	return resp, err
}

// postStream sends a streamed request and gathers its answer. The stream
// is broken off when it goes quiet for the client's timeout.
func (c *Client) postStream(ctx context.Context, path string, b body, onDelta func(Delta)) (openai.ChatCompletionResponse, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(c.cfg.Timeout, cancel)
	defer wd.stop()
	var s interface {
		event([]byte) (bool, error)
		response() (openai.ChatCompletionResponse, error)
	}
	var resp openai.ChatCompletionResponse
	var a responsesAnswer
	var out any = &resp
	responses := c.cfg.Backend == BackendResponses
	if responses {
		s, out = &responsesStream{onDelta: onDelta}, &a
	} else {
		s = &chatStream{onDelta: onDelta}
	}
	streamed, err := c.post(sctx, path, b, out, func(r io.Reader) error { return sseEvents(r, wd.alive, s.event) })
	if errors.Is(context.Cause(sctx), errStalled) && ctx.Err() == nil {
		return resp, wd.stalled()
	}
	switch {
	case err != nil:
		return resp, err
	case streamed:
		return s.response()
	case responses:
		return a.chat("")
	}
	return resp, nil
}

// Verdict is the completion check's structured answer.
type Verdict struct {
	Success bool   `json:"success" description:"true if the task was fully accomplished"`
	Summary string `json:"summary" description:"what was done and its result, or why the task cannot be completed"`
}

// errNoChoices is an answer without choices, which providers send now and
// then under load; do retries it.
var errNoChoices = errors.New("the answer has no choices")

// verifyAttempts bounds the completion checks asked again when the model
// answers with something that is not the verdict's JSON.
const verifyAttempts = 3

// Verify asks the model, with a JSON-schema response format, whether the
// task is done, and returns its verdict. An answer that is not the
// verdict is asked again (with backoff) up to verifyAttempts times before
// it is an error.
func (c *Client) Verify(ctx context.Context, messages []openai.ChatCompletionMessage) (Verdict, Usage, error) {
	var total Usage
	for attempt := 1; ; attempt++ {
		v, u, err := c.verifyOnce(ctx, messages)
		total = total.Add(u)
		if err == nil || !errors.Is(err, errdefs.ErrInvalid) || attempt >= verifyAttempts {
			return v, total, err
		}
		t := time.NewTimer(c.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return Verdict{}, total, ctx.Err()
		case <-t.C:
		}
	}
}

// verifyOnce is one completion check.
func (c *Client) verifyOnce(ctx context.Context, messages []openai.ChatCompletionMessage) (Verdict, Usage, error) {
	schema, err := jsonschema.GenerateSchemaForType(Verdict{})
	if err != nil {
		return Verdict{}, Usage{}, fmt.Errorf("verdict schema: %w", err)
	}
	req := openai.ChatCompletionRequest{
		Model:    c.cfg.Model,
		Messages: messages,
		ResponseFormat: &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "completion_check", Schema: schema, Strict: true},
		},
	}
	resp, err := c.create(ctx, req, nil)
	if err != nil {
		return Verdict{}, Usage{}, err
	}
	var v Verdict
	text := strings.TrimSpace(resp.Choices[0].Message.Content)
	// Some endpoints wrap JSON in a code fence despite the schema.
	text = strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(text, "```json"), "```"), "```")
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &v); err != nil {
		return Verdict{}, usageOf(resp.Usage), errdefs.Invalidf("the completion check did not answer with {success, summary}: %q", truncate(text, 200))
	}
	return v, usageOf(resp.Usage), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ModelInfo is a model the provider offers.
type ModelInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// ContextLength is the context window in tokens, 0 when the provider
	// does not say.
	ContextLength int
	// Reasoning is how the model's reasoning is controlled.
	Reasoning Reasoning
	// Vision says whether the model takes images, when the provider says
	// (OpenRouter's architecture.input_modalities); nil when it does not.
	Vision *bool
}

// Reasoning says how a model's reasoning is controlled: Kind is "none",
// "toggle" (on or off) or "effort" (one of Efforts).
type Reasoning struct {
	Kind    string
	Efforts []string
}

// modelEntry is one model of a /models answer. OpenAI sends id only;
// OpenRouter and others add a name, the context window (under one of
// several names) and the request parameters the model takes.
type modelEntry struct {
	ID                  string   `json:"id"`
	Name                string   `json:"name"`
	ContextLength       int      `json:"context_length"`
	ContextWindow       int      `json:"context_window"`
	MaxContextLength    int      `json:"max_context_length"`
	SupportedParameters []string `json:"supported_parameters"`
	Architecture        *struct {
		InputModalities []string `json:"input_modalities"`
	} `json:"architecture"`
}

// Models lists the provider's models, by id. The request goes through the
// OpenAI client; the answer is read for the fields it drops (name,
// context window, supported parameters).
func (c *Client) Models(ctx context.Context) ([]ModelInfo, error) {
	var list struct {
		Data []modelEntry `json:"data"`
	}
	err := c.do(ctx, func(actx context.Context) error {
		return c.getJSON(actx, "/models", &list)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ModelInfo, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID == "" {
			continue
		}
		info := ModelInfo{ID: m.ID, Name: cmp.Or(m.Name, m.ID),
			ContextLength: cmp.Or(m.ContextLength, m.ContextWindow, m.MaxContextLength), Reasoning: reasoningOf(m)}
		if m.Architecture != nil && m.Architecture.InputModalities != nil {
			v := slices.Contains(m.Architecture.InputModalities, "image")
			info.Vision = &v
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// effortModels are model families known to take reasoning_effort, for
// providers whose /models does not list supported parameters (OpenAI).
var effortModels = []string{"o1", "o3", "o4", "gpt-5", "gpt-oss"}

func reasoningOf(m modelEntry) Reasoning {
	effort := Reasoning{Kind: "effort", Efforts: []string{"low", "medium", "high"}}
	if m.SupportedParameters != nil {
		switch {
		case slices.Contains(m.SupportedParameters, "reasoning_effort") || slices.Contains(m.SupportedParameters, "reasoning"):
			return effort
		case slices.Contains(m.SupportedParameters, "include_reasoning"):
			return Reasoning{Kind: "toggle", Efforts: []string{}}
		}
		return Reasoning{Kind: "none", Efforts: []string{}}
	}
	id := strings.ToLower(m.ID[strings.LastIndex(m.ID, "/")+1:])
	for _, f := range effortModels {
		if id == f || strings.HasPrefix(id, f+"-") || strings.HasPrefix(id, f+".") {
			return effort
		}
	}
	return Reasoning{Kind: "none", Efforts: []string{}}
}

// Test checks that the endpoint answers and accepts the key, and that it
// offers the client's model when it lists models.
func (c *Client) Test(ctx context.Context) error {
	models, err := c.Models(ctx)
	if err != nil {
		return err
	}
	if len(models) > 0 && !slices.ContainsFunc(models, func(m ModelInfo) bool { return m.ID == c.cfg.Model }) {
		return errdefs.NotFoundf("the provider answers but does not list model %q", c.cfg.Model)
	}
	return nil
}
