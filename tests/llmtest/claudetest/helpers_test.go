package claudetest_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"sync"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
)

const testKey = "sk-ant-test"

// newServer is a server that takes testKey.
func newServer(t testing.TB) *claudetest.Server {
	srv := claudetest.New(t)
	srv.Key = testKey
	return srv
}

// sdk is the official client pointed at srv.
func sdk(srv *claudetest.Server) anthropic.Client {
	return anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL),
		option.WithAPIKey(testKey), option.WithMaxRetries(0))
}

// answer is a raw HTTP answer.
type answer struct {
	status  int
	header  http.Header
	body    string
	errType string
	errMsg  string
}

// post sends body (JSON-encoded unless a string) to path with the usual
// headers; hdr sets more, or deletes one with "".
func post(t testing.TB, srv *claudetest.Server, path string, body any, hdr map[string]string) answer {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader([]byte(raw)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-api-key", testKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Type != "error" {
			t.Fatalf("error body %q is not Anthropic's shape", b)
		}
		a.errType, a.errMsg = e.Error.Type, e.Error.Message
	}
	return a
}

// message decodes a non-streamed reply.
func (a answer) message(t testing.TB) anthropic.BetaMessage {
	t.Helper()
	var m anthropic.BetaMessage
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	if err := json.Unmarshal([]byte(a.body), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// req is a valid request, with kv's keys set (or deleted, for nil).
func req(kv ...any) map[string]any {
	m := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": []any{user("Hello there.")}}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
		} else {
			m[kv[i].(string)] = kv[i+1]
		}
	}
	return m
}

func msg(role string, content ...any) map[string]any {
	if len(content) == 1 {
		if s, ok := content[0].(string); ok {
			return map[string]any{"role": role, "content": s}
		}
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{"role": role, "content": content}
}

func user(content ...any) map[string]any      { return msg("user", content...) }
func assistant(content ...any) map[string]any { return msg("assistant", content...) }
func msgs(m ...any) []any                     { return m }

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func cached(b map[string]any, ttl ...string) map[string]any {
	cc := map[string]any{"type": "ephemeral"}
	if len(ttl) > 0 {
		cc["ttl"] = ttl[0]
	}
	out := map[string]any{"cache_control": cc}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func toolUse(id, name string, input any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func toolResult(id string, content any) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}
}

func imageBlock(media, data string) map[string]any {
	return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": media, "data": data}}
}

var waitTool = map[string]any{"name": "wait", "description": "Wait a while.",
	"input_schema": map[string]any{"type": "object", "properties": map[string]any{"seconds": map[string]any{"type": "number"}}}}

var reportTool = map[string]any{"name": "report", "description": "Report whether the task was done.",
	"input_schema": map[string]any{"type": "object", "properties": map[string]any{
		"success": map[string]any{"type": "boolean"}, "summary": map[string]any{"type": "string"}}}}

func computerTool(typ string, w, h int) map[string]any {
	return map[string]any{"type": typ, "name": "computer", "display_width_px": w, "display_height_px": h}
}

// encoded is an image of w×h in format (png or jpeg), base64.
func encoded(t testing.TB, format string, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%max(h, 1), color.RGBA{uint8(x), 80, 160, 255})
	}
	var buf bytes.Buffer
	var err error
	if format == "jpeg" {
		err = jpeg.Encode(&buf, img, nil)
	} else {
		err = png.Encode(&buf, img)
	}
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// recorder is a testing.TB that keeps the errors a server reports about
// its scripts instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// noRefusals fails the test if the server refused anything.
func noRefusals(t testing.TB, srv *claudetest.Server) {
	t.Helper()
	for _, r := range srv.Refusals() {
		t.Errorf("refused (%d %s): %s", r.Status, r.Type, r.Message)
	}
}
