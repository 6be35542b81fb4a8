package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// helper is a real helper (in-process, fake VM backend) with a scripted
// provider.
type helper struct {
	t       *testing.T
	paths   config.Paths
	addr    string
	key     string
	backend *fake.Backend
	llm     *llmtest.Server
	unix    *client.Client
	// stop stops the helper (idempotent).
	stop func()
}

var (
	apiLine = regexp.MustCompile(`API:\s+http://(\S+)/api/v1`)
	keyLine = regexp.MustCompile(`API key:\s+(hc_\S+)`)
)

// startHelper runs a helper until the test ends.
func startHelper(t *testing.T, mutate func(*daemon.Config)) *helper {
	t.Helper()
	home, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	return startHelperAt(t, home, llmtest.New(t), mutate)
}

// startHelperAt runs a helper on an existing data directory.
func startHelperAt(t *testing.T, home string, llm *llmtest.Server, mutate func(*daemon.Config)) *helper {
	t.Helper()
	h := &helper{t: t, paths: config.Paths{Home: home}, backend: fake.New(fake.Options{}), llm: llm}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := daemon.Config{Paths: h.paths, Addr: "127.0.0.1:0", PrintAPIKey: true, Stdout: pw, Backend: h.backend,
		LLMBackoff: time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mutate != nil {
		mutate(&cfg)
	}
	go func() {
		err := daemon.Run(ctx, cfg)
		pw.Close()
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			h.addr = m[1]
		}
		if m := keyLine.FindStringSubmatch(sc.Text()); m != nil {
			h.key = m[1]
		}
		if strings.HasPrefix(sc.Text(), "Press Ctrl+C") {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if h.addr == "" {
		cancel()
		t.Fatalf("helper did not start: %v", <-done)
	}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("helper stopped with %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("helper did not stop")
			}
		})
	}
	t.Cleanup(h.stop)
	h.unix = client.NewUnix(h.paths.Socket())
	return h
}

// tcp returns a client over TCP with the helper's key.
func (h *helper) tcp() *client.Client { return client.NewTCP("http://"+h.addr, h.key) }

// req sends a request over TCP with the key and returns status and body.
func (h *helper) req(method, path string, body any, hdr ...string) (int, []byte) {
	h.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, "http://"+h.addr+path, r)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// expect checks a request's status and, for errors, the error shape.
func (h *helper) expect(want int, method, path string, body any, hdr ...string) []byte {
	h.t.Helper()
	got, out := h.req(method, path, body, hdr...)
	if got != want {
		h.t.Fatalf("%s %s: %d %s; want %d", method, path, got, out, want)
	}
	if want >= 400 {
		var e wire.Error
		if err := json.Unmarshal(out, &e); err != nil || e.Error.Message == "" || e.Error.Code == "" {
			h.t.Fatalf("%s %s: error body %s is not {error: {message, code}}", method, path, out)
		}
	}
	return out
}

// addProvider adds the scripted provider as the default.
func (h *helper) addProvider() wire.Provider {
	h.t.Helper()
	name, base, key, model := "Scripted", h.llm.URL, "sk-test-secret", "scripted"
	p, err := h.unix.AddProvider(context.Background(), wire.ProviderInput{DisplayName: &name, BaseURL: &base, APIKey: &key, DefaultModelID: &model})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// waitTask polls a task until ok says so.
func (h *helper) waitTask(id, what string, ok func(wire.Task) bool) wire.Task {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		task, err := h.unix.Task(context.Background(), id)
		if err != nil {
			h.t.Fatal(err)
		}
		if ok(task) {
			return task
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; task is %s (%s)", what, task.Status, task.StatusReason)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func terminal(t wire.Task) bool {
	switch t.Status {
	case "completed", "failed", "cancelled", "timedOut", "maxIterations":
		return true
	}
	return false
}
