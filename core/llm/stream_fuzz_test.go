package llm

import (
	"strings"
	"testing"
)

// FuzzStreams: whatever a provider streams, in either format, reading it
// ends with an answer or an error, never a panic; tool calls stay within
// the bound.
func FuzzStreams(f *testing.F) {
	for _, seed := range []string{
		"data: " + chunk(`{"content":"hi","tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{"}}]}`) + "\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}\n\n",
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"n\"}]}}\n\n",
		"data: {\"type\":\"error\",\"code\":\"server_error\"}\n\n",
		"data: {\"error\":{\"message\":\"m\",\"code\":7}}\n\n",
		": keep-alive\n\ndata: \ndata: \n\n",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, responses bool) {
		var s interface {
			event([]byte) (bool, error)
		}
		cs, rs := &chatStream{onDelta: func(Delta) {}}, &responsesStream{onDelta: func(Delta) {}}
		s = cs
		if responses {
			s = rs
		}
		if sseEvents(strings.NewReader(body), func() {}, s.event) != nil {
			return
		}
		if responses {
			if rs.final != nil {
				(&responsesBackend{c: &Client{}}).reply(*rs.final, "")
			}
			return
		}
		if len(cs.calls) > 257 {
			t.Fatalf("%d tool calls", len(cs.calls))
		}
		cs.response()
	})
}
