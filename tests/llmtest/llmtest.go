// Package llmtest is the end-to-end tests' fake of an OpenAI-compatible
// chat-completions provider: an HTTP server that plays scripts of answers
// (tool calls, text, completion verdicts, HTTP errors, held answers) and
// records every request it was sent. A script is chosen by a marker string
// found in the request (put it in the task's description); requests that
// match no script get the default: a text answer, then a successful
// verdict. Book, the scripts, is shared with responsestest, the fake of
// OpenAI's Responses API.
package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/llm"
)

// Turn is one answer of a script.
type Turn struct {
	Msg openai.ChatCompletionMessage
	// Status, when set, answers with this HTTP status and an error body.
	Status int
	// Hold, when set, delays the answer until it is closed (or the client
	// gives up).
	Hold <-chan struct{}
	// Delay waits before answering.
	Delay time.Duration
	// Pace, when set, waits this long between the pieces of a streamed
	// answer (the text comes a few words at a time), as a model that
	// writes slowly.
	Pace time.Duration
	// Repeat makes a script's last turn answer every later request too.
	Repeat bool
}

// Tool is a turn that calls one tool.
func Tool(name string, args any) Turn {
	b, _ := json.Marshal(args)
	return Turn{Msg: openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{
		ID: "call-" + name, Type: "function", Function: openai.FunctionCall{Name: name, Arguments: string(b)}}}}}
}

// Text is a turn that answers without a tool call.
func Text(s string) Turn {
	return Turn{Msg: openai.ChatCompletionMessage{Role: "assistant", Content: s}}
}

// Verdict is the answer to the completion check.
func Verdict(success bool, summary string) Turn {
	b, _ := json.Marshal(map[string]any{"success": success, "summary": summary})
	return Text(string(b))
}

// Status is a turn that fails with an HTTP status.
func Status(code int) Turn { return Turn{Status: code} }

// Done is the usual end of a script: a text answer and a successful verdict.
func Done(summary string) []Turn { return []Turn{Text("I am done."), Verdict(true, summary)} }

// Server is the scripted provider.
type Server struct {
	// URL is the base URL to configure (ends in /v1).
	URL string
	// Key, if set, is the only API key accepted; others get 401.
	Key string
	// Models, if set, are the model ids GET /models lists; the default is
	// "scripted" alone.
	Models []string
	// Match, if set, picks the script of a request by name (the marker
	// given to Script) instead of by the markers it contains; "" or an
	// unknown name gets the default answers. Set it before the first
	// request.
	Match func(body string) string

	// Book holds the scripts: Script, TitleTurn, Titles, Requests.
	Book[Turn]

	// mu guards all.
	mu  sync.Mutex
	all []string
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/v1"
	return s
}

// Title sets the answer to title requests.
func (s *Server) Title(title string) { s.TitleTurn(Text(title)) }

// Count returns how many chat requests the server has answered.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		writeStatus(w, http.StatusUnauthorized, "Incorrect API key provided.")
		return
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		ids := s.Models
		if len(ids) == 0 {
			ids = []string{"scripted"}
		}
		models := make([]map[string]any, len(ids))
		for i, id := range ids {
			models[i] = map[string]any{"id": id, "object": "model"}
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": models})
		return
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
	default:
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	body := string(raw)
	s.mu.Lock()
	s.all = append(s.all, body)
	s.mu.Unlock()
	turn, _ := s.Next(body, s.Match, func(t Turn) bool { return t.Repeat }, func(title bool) Turn {
		if title {
			return Text("")
		}
		return defaultTurn(body)
	})
	if turn.Delay > 0 {
		select {
		case <-time.After(turn.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if turn.Hold != nil {
		select {
		case <-turn.Hold:
		case <-r.Context().Done():
			return
		}
	}
	if turn.Status != 0 {
		writeStatus(w, turn.Status, http.StatusText(turn.Status))
		return
	}
	usage := openai.Usage{PromptTokens: 1000, CompletionTokens: 20, TotalTokens: 1020}
	if strings.Contains(body, `"stream":true`) {
		stream(r.Context(), w, turn.Msg, usage, turn.Pace)
		return
	}
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
		ID: "scripted", Object: "chat.completion", Model: "scripted",
		Choices: []openai.ChatCompletionChoice{{Message: turn.Msg, FinishReason: "stop"}},
		Usage:   usage,
	})
}

// IsTitleRequest reports whether a request asks for a task's title: it
// carries llm.TitlePrompt (as its system message, or a Responses
// request's instructions). Fakes in front of a Server pass these on.
func IsTitleRequest(body []byte) bool { return bytes.Contains(body, []byte(llm.TitlePrompt)) }

// stream answers a streamed request as real providers do: server-sent
// chat completion chunks, the text a few words at a time, each tool call's
// arguments in two pieces, then the finish reason, the usage and [DONE];
// pace apart, if set.
func stream(ctx context.Context, w http.ResponseWriter, msg openai.ChatCompletionMessage, usage openai.Usage, pace time.Duration) {
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	send := func(v any) {
		if pace > 0 {
			select {
			case <-time.After(pace):
			case <-ctx.Done():
			}
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		rc.Flush()
	}
	chunk := func(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) openai.ChatCompletionStreamResponse {
		return openai.ChatCompletionStreamResponse{ID: "scripted", Object: "chat.completion.chunk", Model: "scripted",
			Choices: []openai.ChatCompletionStreamChoice{{Delta: d, FinishReason: finish}}}
	}
	send(chunk(openai.ChatCompletionStreamChoiceDelta{Role: "assistant"}, ""))
	for _, word := range strings.SplitAfter(msg.Content, " ") {
		if word != "" {
			send(chunk(openai.ChatCompletionStreamChoiceDelta{Content: word}, ""))
		}
	}
	for i, tc := range msg.ToolCalls {
		args := tc.Function.Arguments
		cut := len(args) / 2
		send(chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &i, ID: tc.ID, Type: tc.Type,
			Function: openai.FunctionCall{Name: tc.Function.Name, Arguments: args[:cut]}}}}, ""))
		send(chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &i,
			Function: openai.FunctionCall{Arguments: args[cut:]}}}}, ""))
	}
	finish := openai.FinishReasonStop
	if len(msg.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	send(chunk(openai.ChatCompletionStreamChoiceDelta{}, finish))
	send(map[string]any{"id": "scripted", "object": "chat.completion.chunk", "choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// defaultTurn finishes any task: a text answer, then a successful verdict.
func defaultTurn(body string) Turn {
	if strings.Contains(body, "Was the task fully accomplished") {
		return Verdict(true, "Done.")
	}
	return Text("Finished.")
}

func writeStatus(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}
