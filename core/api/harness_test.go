package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
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
	d    *daemontest.Helper
}

// startHelper runs a helper on a new data directory until the test ends.
func startHelper(t *testing.T, mutate func(*daemon.Config)) *helper {
	t.Helper()
	llm := llmtest.New(t) // closed after the helper stops
	return newHelper(t, daemontest.Start(t, mutate), llm)
}

// startHelperAt runs a helper on an existing data directory.
func startHelperAt(t *testing.T, home string, llm *llmtest.Server, mutate func(*daemon.Config)) *helper {
	t.Helper()
	return newHelper(t, daemontest.StartAt(t, home, mutate), llm)
}

func newHelper(t *testing.T, d *daemontest.Helper, llm *llmtest.Server) *helper {
	return &helper{t: t, paths: d.Paths, addr: d.Addr, key: d.Key, backend: d.Backend, llm: llm, unix: d.Unix, stop: d.Stop, d: d}
}

// tcp returns a client over TCP with the helper's key.
func (h *helper) tcp() *client.Client { return h.d.TCP() }

// req sends a request over TCP with the key and returns status and body.
func (h *helper) req(method, path string, body any, hdr ...string) (int, []byte) {
	h.t.Helper()
	code, out, _ := h.reqHeader(method, path, body, hdr...)
	return code, out
}

// reqHeader is req with the answer's header.
func (h *helper) reqHeader(method, path string, body any, hdr ...string) (int, []byte, http.Header) {
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
	return resp.StatusCode, out, resp.Header
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
	return daemontest.WaitTask(h.t, h.unix, id, what, 20*time.Second, ok)
}

func terminal(t wire.Task) bool {
	switch t.Status {
	case "completed", "failed", "cancelled", "timedOut", "maxIterations":
		return true
	}
	return false
}
