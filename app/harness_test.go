package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/core/wire"
)

// TestMain keeps the helpers of the tests away from the user's home and
// keyring (API keys go to the file store), and lets the test binary play
// the helper binary for TestStartsTheHelper.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == helperBinary {
		os.Exit(fakeHelperMain(os.Args[1:]))
	}
	userHome, err := os.MkdirTemp("", "hcuser")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", userHome)
	os.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
	os.Unsetenv(config.HomeEnv)
	code := m.Run()
	os.RemoveAll(userHome)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	// mu guards b.
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// helper is a real helper running in-process with the fake VM backend on a
// new data directory.
type helper struct {
	t    *testing.T
	home string
	c    *client.Client
}

// shortHome returns a new data directory with a short path (unix socket
// paths are limited to ~104 bytes).
func shortHome(t *testing.T) string {
	home, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	return home
}

func startHelper(t *testing.T) *helper {
	t.Helper()
	home := shortHome(t)
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Config{
			Paths: config.Paths{Home: home}, Addr: "127.0.0.1:0", Backend: fake.New(fake.Options{}),
			Log: slog.New(slog.NewTextHandler(logs, nil)), LLMBackoff: time.Millisecond, DrainTimeout: 5 * time.Second,
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("helper: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("the helper did not stop within 15 s")
		}
		if t.Failed() {
			t.Logf("helper log:\n%s", logs.String())
		}
	})
	c := client.NewUnix(config.Paths{Home: home}.Socket())
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	healthy := make(chan error, 1)
	go func() { healthy <- c.WaitHealthy(wctx) }()
	select {
	case err := <-healthy:
		if err != nil {
			t.Fatalf("helper not healthy: %v\n%s", err, logs.String())
		}
	case err := <-done:
		t.Fatalf("helper stopped: %v\n%s", err, logs.String())
	}
	return &helper{t: t, home: home, c: c}
}

// result is what one CLI run printed.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cliTimeout bounds one CLI run in the tests.
const cliTimeout = 30 * time.Second

// cli runs the CLI against the helper (--home after the command, as users
// type it).
func (h *helper) cli(args ...string) result {
	h.t.Helper()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(append(args, "--home", h.home), &out, &errOut) }()
	select {
	case code := <-done:
		return result{code, out.String(), errOut.String()}
	case <-time.After(cliTimeout):
		h.t.Fatalf("hivecrew %s hangs after %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), cliTimeout, out.String(), errOut.String())
		return result{}
	}
}

// cliAsync runs the CLI in the background (the caller bounds the wait).
func (h *helper) cliAsync(args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		var out, errOut syncBuffer
		code := run(append(args, "--home", h.home), &out, &errOut)
		ch <- result{code, out.String(), errOut.String()}
	}()
	return ch
}

// ok runs the CLI and fails the test unless it exits 0.
func (h *helper) ok(args ...string) result {
	h.t.Helper()
	r := h.cli(args...)
	if r.code != 0 {
		h.t.Fatalf("hivecrew %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// task reads a task through the client.
func (h *helper) task(id string) wire.Task {
	h.t.Helper()
	t, err := h.c.Task(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return t
}

// waitStatus waits until a task has one of the statuses.
func (h *helper) waitStatus(id string, statuses ...string) wire.Task {
	h.t.Helper()
	var t wire.Task
	waitFor(h.t, "task status "+strings.Join(statuses, "|"), func() bool {
		t = h.task(id)
		for _, s := range statuses {
			if t.Status == s {
				return true
			}
		}
		return false
	})
	return t
}

// addProvider adds the scripted LLM as the default provider "Scripted".
func (h *helper) addProvider(llmURL string) {
	h.t.Helper()
	h.ok("providers", "add", "--name", "Scripted", "--base-url", llmURL, "--api-key", "sk-test-secret-1234", "--default", "--model", "scripted")
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scripted is an OpenAI-compatible server that answers chat requests from
// a list (tool calls, then text, then the completion check's verdict) and
// records what it was sent.
type scripted struct {
	answers []openai.ChatCompletionMessage

	// mu guards holds and bodies.
	mu sync.Mutex
	// holds, by answer index, delay an answer until the channel closes.
	holds  map[int]chan struct{}
	bodies []string
}

// newScripted starts a scripted LLM server and returns it with its base URL.
func newScripted(t *testing.T, answers ...openai.ChatCompletionMessage) (*scripted, string) {
	s := &scripted{answers: answers, holds: map[int]chan struct{}{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/v1"
}

// hold makes answer n wait until the returned function is called.
func (s *scripted) hold(n int) func() {
	ch := make(chan struct{})
	s.mu.Lock()
	s.holds[n] = ch
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (s *scripted) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/models") {
		json.NewEncoder(w).Encode(openai.ModelsList{Models: []openai.Model{{ID: "scripted", Object: "model"}, {ID: "other", Object: "model"}}})
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	msg := openai.ChatCompletionMessage{Role: "assistant", Content: "out of script"}
	if n < len(s.answers) {
		msg = s.answers[n]
	}
	hold := s.holds[n]
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: msg}},
		Usage: openai.Usage{PromptTokens: 1000, CompletionTokens: 20}})
}

func tool(name string, args any) openai.ChatCompletionMessage {
	b, _ := json.Marshal(args)
	return openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c-" + name, Type: "function",
		Function: openai.FunctionCall{Name: name, Arguments: string(b)}}}}
}

func text(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "assistant", Content: s}
}

func verdict(success bool, summary string) openai.ChatCompletionMessage {
	b, _ := json.Marshal(llm.Verdict{Success: success, Summary: summary})
	return text(string(b))
}

// decodeOne decodes s as exactly one JSON value into v.
func decodeOne(t *testing.T, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout:\n%s", s)
	}
}
