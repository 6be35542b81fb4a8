package claudetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/llm"
)

// Answers of each protocol, as JSON and as an event stream.
var foreign = map[string]struct{ json, sse string }{
	"OpenAI chat completions": {
		`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`,
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"},
	"Anthropic Messages": {
		`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
	"OpenAI Responses": {
		`{"id":"resp_1","object":"response","status":"completed","output":[]}`,
		"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n"},
}

// TestWrongProtocolIsSaidOnce: a provider whose type does not match the
// protocol its endpoint answers in (an anthropic provider pointed at an
// OpenAI-compatible gateway, an OpenAI-compatible one at an Anthropic
// one, …) gets one clear error naming the protocol it got and telling
// the user to check the type, not five retries of "no choices".
func TestWrongProtocolIsSaidOnce(t *testing.T) {
	clients := map[string]llm.Config{
		"Anthropic Messages":      {Type: llm.TypeAnthropic, Model: "claude-sonnet-4-5"},
		"OpenAI chat completions": {Type: llm.TypeOpenAICompatible, Model: "m"},
		"OpenAI Responses":        {Type: llm.TypeOpenAI, Model: "gpt-5"},
	}
	for speaks, cfg := range clients {
		for got, body := range foreign {
			if got == speaks {
				continue
			}
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s client, %s answer, stream %v", speaks, got, stream), func(t *testing.T) {
					srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if strings.Contains(r.Header.Get("Accept"), "text/event-stream") || strings.Contains(readAll(r), `"stream":true`) {
							w.Header().Set("Content-Type", "text/event-stream")
							fmt.Fprint(w, body.sse)
							return
						}
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprint(w, body.json)
					}))
					defer srv.Close()
					c := cfg
					c.BaseURL, c.BackoffBase, c.BackoffMax = srv.URL+"/v1", time.Millisecond, time.Millisecond
					cl, err := llm.New(c)
					if err != nil {
						t.Fatal(err)
					}
					var onDelta func(llm.Delta)
					if stream {
						onDelta = func(llm.Delta) {}
					}
					_, err = cl.CompleteStream(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("hello")}}, onDelta)
					var le *llm.Error
					if !errors.As(err, &le) || le.Attempts != 1 || !strings.Contains(err.Error(), "another protocol ("+got+")") || !strings.Contains(err.Error(), "check the provider's type") {
						t.Fatalf("error %v", err)
					}
				})
			}
		}
	}
}

func readAll(r *http.Request) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestUnknownModelIsSaid: a model the provider does not know is refused
// once, in words.
func TestUnknownModelIsSaid(t *testing.T) {
	s := New(t)
	c, err := llm.New(llm.Config{Type: llm.TypeAnthropic, BaseURL: s.URL, Model: "claude-nonexistent", BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("hi")}})
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 404 || le.Attempts != 1 || !strings.Contains(err.Error(), "does not know this model") {
		t.Fatalf("error %#v", err)
	}
}
