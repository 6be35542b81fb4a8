package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Streaming (issue 17.1). An agent's turn is asked for as a stream, so the
// user watches the model's text and reasoning as they come instead of a
// frozen window while a reasoning model thinks. Both backends stream
// server-sent events: Chat Completions chunks (choices[0].delta), and the
// Responses API's typed events. A provider that answers a streamed request
// with one JSON body is read as if it had not been asked to stream.
//
// The provider is trusted with the task, not with the helper's memory: a
// line of the stream is at most maxStreamLine bytes and a whole answer at
// most maxAnswerBytes, and a stream that goes quiet for the client's
// Timeout is broken off and asked again (streamSpan bounds the whole).

// Delta is a piece of the model's answer as it streams.
type Delta struct {
	// Restart says an attempt begins: what earlier deltas of this call
	// said is void (the attempt before it broke off and is asked again).
	Restart bool
	// Text and Reasoning are what the answer's text and its reasoning (or
	// reasoning summary) grew by.
	Text, Reasoning string
}

const (
	maxStreamLine  = 8 << 20
	maxAnswerBytes = 32 << 20
	// streamSpan is how many Timeouts one streamed attempt may take in all,
	// as long as it never goes quiet for one.
	streamSpan = 10
)

// errStalled is a stream that went quiet for longer than the timeout.
var errStalled = errors.New("the provider's stream went quiet")

// errIncomplete is a stream that ended before its answer did.
var errIncomplete = fmt.Errorf("the stream ended before the answer did: %w", io.ErrUnexpectedEOF)

// sseEvents reads server-sent events from r and calls fn with each one's
// data (data lines joined by newlines), until the stream ends, fn fails or
// fn returns done. Every line read resets alive (the stall watchdog).
func sseEvents(r io.Reader, alive func(), fn func(data []byte) (done bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
	var data bytes.Buffer
	dispatch := func() (bool, error) {
		if data.Len() == 0 {
			return false, nil
		}
		d := bytes.Clone(data.Bytes())
		data.Reset()
		return fn(d)
	}
	for sc.Scan() {
		alive()
		line := sc.Bytes()
		if len(line) == 0 {
			if done, err := dispatch(); done || err != nil {
				return err
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue // comments (": keep-alive"), event:, id:, retry:
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if data.Len() > 0 {
			data.WriteByte('\n')
		}
		if data.Len()+len(value) > maxAnswerBytes {
			return fmt.Errorf("a stream event is larger than %d MB", maxAnswerBytes>>20)
		}
		data.Write(value)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("a stream line is longer than %d MB", maxStreamLine>>20)
		}
		return err
	}
	_, err := dispatch()
	return err
}

// postWatched sends a streamed request to path: an event stream goes to
// event, an answer that is not streamed is decoded into out. The stream is
// broken off when it goes quiet for the client's timeout.
func (c *Client) postWatched(ctx context.Context, path string, b body, out any, event func([]byte) (bool, error)) (streamed bool, err error) {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(c.cfg.Timeout, cancel)
	defer wd.stop()
	streamed, err = c.post(sctx, path, b, out, func(r io.Reader) error { return sseEvents(r, wd.alive, event) })
	if errors.Is(context.Cause(sctx), errStalled) && ctx.Err() == nil {
		return streamed, wd.stalled()
	}
	return streamed, err
}

// watchdog cancels a streamed attempt that goes quiet for idle.
type watchdog struct {
	t    *time.Timer
	idle time.Duration
	// heard: a line of the stream came (only the reading goroutine writes
	// it, and reads it after the read ended).
	heard bool
}

func newWatchdog(idle time.Duration, cancel context.CancelCauseFunc) *watchdog {
	return &watchdog{t: time.AfterFunc(idle, func() { cancel(errStalled) }), idle: idle}
}

func (w *watchdog) alive() {
	w.heard = true
	w.t.Reset(w.idle)
}

// stalled is the error of a stream the watchdog broke off.
func (w *watchdog) stalled() error {
	if !w.heard {
		return fmt.Errorf("no answer within %s: %w", w.idle, errStalled)
	}
	return fmt.Errorf("%w for %s", errStalled, w.idle)
}
func (w *watchdog) stop() { w.t.Stop() }

// chatChunk is one chunk of a streamed chat completion. Reasoning comes as
// reasoning_content (DeepSeek, vLLM, LM Studio) or reasoning (OpenRouter,
// Ollama).
type chatChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role             string `json:"role"`
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			Refusal          string `json:"refusal"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason openai.FinishReason `json:"finish_reason"`
	} `json:"choices"`
	Usage *openai.Usage    `json:"usage"`
	Error *openai.APIError `json:"error"`
}

// chatStream gathers a streamed chat completion into the response it
// stands for.
type chatStream struct {
	onDelta func(Delta)
	// typ is the provider's type, for the error of a stream in another
	// protocol.
	typ                         string
	content, reasoning, refusal strings.Builder
	calls                       []openai.ToolCall
	finish                      openai.FinishReason
	usage                       openai.Usage
	size                        int
	done, sawChoice             bool
}

func (s *chatStream) event(data []byte) (bool, error) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		s.done = true
		return true, nil
	}
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return false, fmt.Errorf("a stream chunk is not a chat completion chunk: %w", err)
	}
	if !s.sawChoice && c.Choices == nil && c.Error == nil {
		var probe answerProbe
		json.Unmarshal(data, &probe)
		if p := protocolOf(probe); p != "" && p != "OpenAI chat completions" {
			return false, wrongProtocol(s.typ, p)
		}
	}
	if c.Error != nil {
		return false, streamError(c.Error.Code, c.Error.Type, c.Error.Message)
	}
	if c.Usage != nil {
		s.usage = *c.Usage
	}
	s.size += len(data)
	if s.size > maxAnswerBytes {
		return false, fmt.Errorf("the answer is larger than %d MB", maxAnswerBytes>>20)
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only the first choice is asked for
		}
		s.sawChoice = true
		d := ch.Delta
		s.content.WriteString(d.Content)
		s.refusal.WriteString(d.Refusal)
		r := d.ReasoningContent + d.Reasoning
		s.reasoning.WriteString(r)
		if s.onDelta != nil && (d.Content != "" || r != "") {
			s.onDelta(Delta{Text: d.Content, Reasoning: r})
		}
		for _, tc := range d.ToolCalls {
			i := len(s.calls) - 1
			switch {
			case tc.Index != nil:
				i = *tc.Index
			case tc.ID != "" || i < 0:
				i = len(s.calls) // a provider that numbers no calls starts each with its id
			}
			if i < 0 || i > len(s.calls) || i > 256 {
				return false, fmt.Errorf("a stream chunk names tool call %d of %d", i, len(s.calls))
			}
			if i == len(s.calls) {
				s.calls = append(s.calls, openai.ToolCall{Type: openai.ToolTypeFunction})
			}
			call := &s.calls[i]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Type != "" {
				call.Type = openai.ToolType(tc.Type)
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
	}
	return false, nil
}

// response is the chat completion the stream stood for.
func (s *chatStream) response() (openai.ChatCompletionResponse, error) {
	if !s.done && s.finish == "" {
		return openai.ChatCompletionResponse{}, errIncomplete
	}
	if !s.sawChoice {
		return openai.ChatCompletionResponse{Usage: s.usage}, nil // no choices: a hiccup (see create)
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: s.content.String(),
		ReasoningContent: s.reasoning.String(), Refusal: s.refusal.String(), ToolCalls: s.calls}
	return openai.ChatCompletionResponse{Object: "chat.completion", Usage: s.usage,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: s.finish}}}, nil
}

// streamError is an error a provider sent inside a stream, after its HTTP
// status said all was well. It is given the status the same error would
// have had before the stream began, so it is retried, or read as a
// context overflow, the same way.
func streamError(code any, kind, message string) error {
	c := strings.ToLower(fmt.Sprint(code))
	if code == nil {
		c = ""
	}
	status := 500
	switch {
	case strings.Contains(c, "rate_limit") || kind == "rate_limit_error" || kind == "tokens":
		status = 429
	case strings.Contains(c, "context_length") || strings.Contains(c, "invalid") || kind == "invalid_request_error":
		status = 400
	}
	if message == "" {
		message = "the provider's stream reported an error"
		if c != "" {
			message += " (" + c + ")"
		}
	}
	return &openai.APIError{Code: code, Type: kind, Message: message, HTTPStatusCode: status}
}
