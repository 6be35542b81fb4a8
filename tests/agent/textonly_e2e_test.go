package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
)

// reader is a model without vision played by the test: it decides from
// the text it was sent, as a model would, and never gets an image.
type reader struct {
	mu     sync.Mutex
	bodies []string
	decide func(n int, lastUser string) openai.ChatCompletionMessage
}

func (s *reader) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req openai.ChatCompletionRequest
	json.Unmarshal(body, &req)
	last := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			last = m.Content
			for _, p := range m.MultiContent {
				last += p.Text
			}
		}
	}
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	msg := s.decide(n, last)
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: msg}}, Usage: openai.Usage{PromptTokens: 1000, CompletionTokens: 20}})
}

// TestTextOnlyModelWorksByElementIds: a model without vision writes a
// sentence into a real text editor in a real sandbox. It is sent the
// running applications and the accessibility tree, never a screenshot;
// it finds the editor's text area in the tree, sets its text by the id it
// read there, and saves with the keyboard. The file holds the sentence.
func TestTextOnlyModelWorksByElementIds(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, g, data := startGuest(t, "textonly")

	textArea := regexp.MustCompile(`(?m)^\s*(e\d+) text\b`)
	verdict, _ := json.Marshal(llm.Verdict{Success: true, Summary: "Wrote the sentence with Mousepad, by element id."})
	var found, tree string
	saved := false
	s := &reader{decide: func(n int, last string) openai.ChatCompletionMessage {
		switch {
		case strings.Contains(last, "Was the task fully accomplished"):
			return openai.ChatCompletionMessage{Role: "assistant", Content: string(verdict)}
		case n == 0:
			return tool("write_file", map[string]any{"path": "outbox/note.txt", "contents": ""})
		case n == 1:
			return tool("open_file", map[string]any{"path": "outbox/note.txt", "app": "mousepad"})
		case found == "":
			// Wait for the editor's text area to show in the tree.
			if !strings.Contains(last, "mousepad") {
				return tool("wait", map[string]any{"seconds": 1})
			}
			mm := textArea.FindStringSubmatch(last[strings.Index(last, "mousepad"):])
			if mm == nil {
				return tool("wait", map[string]any{"seconds": 1})
			}
			found, tree = mm[1], last
			return tool("set_element_value", map[string]any{"id": found, "text": sentence})
		case !saved:
			saved = true
			return tool("keyboard_key", map[string]any{"key": "s", "modifiers": []string{"control"}})
		}
		return openai.ChatCompletionMessage{Role: "assistant", Content: "I set the text by its element id and saved the file."}
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "text-only"})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(data, "Sessions", "s-textonly"))
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	r, err := agent.New(agent.Config{
		Task: agent.Task{ID: "t-textonly", Description: "Write the sentence into outbox/note.txt with a text editor.",
			Network: config.NetworkOffline, Policy: config.ToolPolicy{}, Timeout: 2 * time.Minute, MaxIterations: 20, TextOnly: true},
		LLM: client, Guest: g, Trace: tw, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	res := r.Run(ctx)
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v\nlast request: %.3000s", res, s.all()[len(s.all())-1])
	}
	if found == "" {
		t.Fatal("the model never found the text area in the tree")
	}
	got, err := os.ReadFile(filepath.Join(m.Spec().SharedDir(), "outbox", "note.txt"))
	if err != nil || strings.TrimSpace(string(got)) != sentence {
		t.Fatalf("outbox/note.txt = %q, %v", got, err)
	}
	for i, b := range s.all() {
		if strings.Contains(b, "image_url") {
			t.Fatalf("request %d sent an image to a model without vision", i)
		}
	}
	if !strings.Contains(tree, "In front:") || !strings.Contains(tree, "Accessibility tree") {
		t.Errorf("the step's text lacks the front application or the tree:\n%.2000s", tree)
	}
	t.Logf("the text area was %s; %d steps; the tree it was read from:\n%.1500s", found, res.Steps, tree)
}

func (s *reader) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}
