package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/webtools"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
	"github.com/hivecrew/hivecrew/tests/llmtest/responsestest"
)

// A research subagent (no VM) with each provider type: OpenAI-compatible
// chat completions, OpenAI's Responses and Anthropic's Messages, each the
// strict scripted server of its protocol. It reads a page with the real
// read_webpage host tool (from the host, under the egress policy; the
// page is on this machine's loopback, opened by the allowlist) and ends
// with what it found. No request carries an image or offers a VM's tool
// (the strict servers refuse a call of a tool a request does not offer),
// and no server refused a request. Over chat completions, whose servers
// take any name, the model forges calls of run_shell and of the computer
// tool: each is refused in words, and nothing runs.

const tidePage = `<html><head><title>Porthleven tides</title></head><body><nav>Menu Shop About</nav><article><h1>Porthleven tides</h1>
<p>The spring tide in March reaches 5.6 metres at the inner quay, the highest of the year, and the harbour dries at low water.</p>
<p>Harbour masters publish the tables every January; fishermen and surfers plan around them, and in storms the baulks go in.</p>
<p>The outer harbour fills fast in a south-westerly gale, which is why the inner harbour has its baulks.</p></article></body></html>`

// hostRunner runs a research agent of client c with the web tools.
func hostRunner(t *testing.T, c *llm.Client, description string) agent.Result {
	t.Helper()
	tw, err := trace.Create(filepath.Join(t.TempDir(), "session"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	allow, err := config.ResolveAllow([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.New(agent.Config{
		Task: agent.Task{ID: "research", Description: description, Network: config.NetworkInternet, Host: true,
			Policy: config.ToolPolicy{}, Timeout: 2 * time.Minute, MaxIterations: 10},
		LLM: c, Trace: tw, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		HostTools: webtools.Tools(webtools.Search{}, allow),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return r.Run(ctx)
}

func TestResearchAgentWithEveryProviderType(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(tidePage))
	}))
	defer page.Close()
	read := map[string]any{"url": page.URL + "/tides"}
	shell := map[string]any{"command": "curl " + page.URL}
	click := map[string]any{"action": "left_click", "coordinate": []int{10, 10}}
	const marker = "[[research]]"
	for _, tc := range []struct {
		name string
		// start scripts the provider and returns its client and the
		// bodies of the requests it answered.
		start func(t *testing.T) (*llm.Client, func() []string)
		// forged says the script calls run_shell and computer, which
		// the requests never offer.
		forged bool
	}{
		{"chat completions", func(t *testing.T) (*llm.Client, func() []string) {
			s := llmtest.New(t)
			s.Script(marker, append([]llmtest.Turn{llmtest.Tool("read_webpage", read), llmtest.Tool("run_shell", shell), llmtest.Tool("computer", click)}, llmtest.Done("5.6 metres in March.")...)...)
			c, err := llm.New(llm.Config{BaseURL: s.URL, Model: "scripted", BackoffBase: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return c, func() []string { return s.Requests(marker) }
		}, true},
		{"responses", func(t *testing.T) (*llm.Client, func() []string) {
			s := responsestest.New(t)
			s.Script(marker, append([]responsestest.Turn{responsestest.Call("read_webpage", read)}, responsestest.Done("5.6 metres in March.")...)...)
			c, err := llm.New(llm.Config{Type: llm.TypeOpenAI, BaseURL: s.URL, Model: "gpt-5", BackoffBase: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if n := s.Refusals(); n > 0 {
					t.Errorf("the Responses API would have refused %d request(s)", n)
				}
			})
			return c, func() []string { return s.Requests(marker) }
		}, false},
		{"anthropic", func(t *testing.T) (*llm.Client, func() []string) {
			s := claudetest.New(t)
			s.Script(marker, append([]claudetest.Turn{claudetest.ToolUse("read_webpage", read)}, claudetest.Done("5.6 metres in March.")...)...)
			c := claudeFor(t, s)
			t.Cleanup(func() { claudeRefusals(t, s) })
			return c, func() []string { return s.Requests(marker) }
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, requests := tc.start(t)
			res := hostRunner(t, c, "How high is the spring tide in Porthleven? "+marker)
			if res.Status != store.StatusCompleted || res.Summary != "5.6 metres in March." {
				t.Fatalf("result %+v", res)
			}
			reqs := requests()
			if len(reqs) < 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			all := strings.Join(reqs, "\n")
			want := []string{"5.6 metres at the inner quay", "research subagent"}
			if tc.forged {
				want = append(want, "run_shell needs a VM, and this subagent has none", "computer needs a VM, and this subagent has none")
			}
			for _, w := range want {
				if !strings.Contains(all, w) {
					t.Errorf("the model never saw %q", w)
				}
			}
			// The first request offers the tools: read_webpage and the
			// checklist, no VM tool.
			for _, w := range []string{"read_webpage", "todo"} {
				if !strings.Contains(reqs[0], `"`+w+`"`) {
					t.Errorf("the first request does not offer %s", w)
				}
			}
			for _, vmTool := range []string{"run_shell", "mouse_click", "read_file", "computer", "screenshot"} {
				if strings.Contains(reqs[0], `"`+vmTool+`"`) {
					t.Errorf("the first request offers %s", vmTool)
				}
			}
			for i, body := range reqs {
				if strings.Contains(body, "image_url") || strings.Contains(body, `"input_image"`) || strings.Contains(body, `"type":"image"`) {
					t.Errorf("request %d carries an image", i)
				}
				if strings.Contains(body, `"computer_use`) || strings.Contains(body, `"type":"computer`) {
					t.Errorf("request %d offers a computer tool", i)
				}
			}
		})
	}
}
