package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
)

// server is a scripted OpenAI-compatible endpoint: each chat request gets
// the next handler of the script (the last one repeats), and every request
// body is recorded.
type server struct {
	t      *testing.T
	mu     sync.Mutex
	script []http.HandlerFunc
	bodies [][]byte
	urls   []string
	times  []time.Time
	srv    *httptest.Server
}

func newServer(t *testing.T, script ...http.HandlerFunc) *server {
	s := &server{t: t, script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{"id": "gpt-test", "object": "model"}, {"id": "gpt-other", "object": "model"}}})
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, body)
		s.urls = append(s.urls, r.URL.Path)
		s.times = append(s.times, time.Now())
		h := s.script[min(n, len(s.script)-1)]
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// paths are the paths of the requests, in order.
func (s *server) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.urls)
}

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func reply(content string, calls ...openai.ToolCall) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
			ID: "c", Object: "chat.completion", Model: "gpt-test",
			Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: "assistant", Content: content, ToolCalls: calls}, FinishReason: "stop"}},
			Usage:   openai.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120},
		})
	}
}

func status(code int, retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write([]byte(`{"error":{"message":"scripted failure","type":"test"}}`))
	}
}

func client(t *testing.T, s *server, mutate func(*Config)) *Client {
	cfg := Config{BaseURL: s.srv.URL + "/v1", APIKey: "sk-test", Model: "gpt-test", BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var userTurn = Request{Messages: []Message{UserText("click the button")}}

func TestCompleteReturnsToolCallsInOrder(t *testing.T) {
	s := newServer(t, reply("clicking", openai.ToolCall{ID: "1", Type: "function", Function: openai.FunctionCall{Name: "mouse_click", Arguments: `{"x":10,"y":20}`}},
		openai.ToolCall{ID: "2", Type: "function", Function: openai.FunctionCall{Name: "screenshot", Arguments: ``}}))
	c := client(t, s, nil)
	req := userTurn
	req.Tools = []Tool{{Name: "mouse_click", Parameters: json.RawMessage(`{"type":"object"}`)}}
	r, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "clicking" || len(r.ToolCalls) != 2 || r.ToolCalls[0].Name != "mouse_click" || string(r.ToolCalls[0].Args) != `{"x":10,"y":20}` || string(r.ToolCalls[1].Args) != "{}" {
		t.Fatalf("reply = %+v", r)
	}
	if r.Usage != (Usage{Prompt: 100, Completion: 20, Total: 120}) {
		t.Fatalf("usage = %+v", r.Usage)
	}
	var sent map[string]any
	json.Unmarshal(s.bodies[0], &sent)
	if sent["model"] != "gpt-test" || sent["tools"] == nil {
		t.Fatalf("request = %s", s.bodies[0])
	}
}

// TestRetryAfterIsHonoured: 429 with Retry-After: 1, then success: one retry
// about a second later.
func TestRetryAfterIsHonoured(t *testing.T) {
	s := newServer(t, status(429, "1"), reply("ok"))
	var retries []time.Duration
	c := client(t, s, func(c *Config) {
		c.OnRetry = func(_ int, wait time.Duration, _ error) { retries = append(retries, wait) }
	})
	if _, err := c.Complete(context.Background(), userTurn); err != nil {
		t.Fatal(err)
	}
	if s.requests() != 2 || len(retries) != 1 || retries[0] != time.Second {
		t.Fatalf("%d requests, retries %v", s.requests(), retries)
	}
	if gap := s.times[1].Sub(s.times[0]); gap < 950*time.Millisecond || gap > 3*time.Second {
		t.Fatalf("retried after %s, want about 1 s", gap)
	}
}

func TestServerErrorsExhaustTheAttempts(t *testing.T) {
	s := newServer(t, status(500, ""))
	c := client(t, s, nil)
	_, err := c.Complete(context.Background(), userTurn)
	var e *Error
	if !errors.As(err, &e) || e.Status != 500 || e.Attempts != 5 || !e.Retryable || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("error = %#v", err)
	}
	if s.requests() != 5 || !strings.Contains(err.Error(), "after 5 attempts") {
		t.Fatalf("%d requests; %v", s.requests(), err)
	}
}

func TestRefusedKeyIsNotRetried(t *testing.T) {
	s := newServer(t, status(401, ""))
	_, err := client(t, s, nil).Complete(context.Background(), userTurn)
	if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "refused the API key") || s.requests() != 1 {
		t.Fatalf("error = %v after %d requests", err, s.requests())
	}
}

func TestHangingAndBrokenAnswersAreRetried(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	broken := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "500")
		w.WriteHeader(200)
		w.Write([]byte(`{"id":"c","choices":[{"message":{"role":"assist`))
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}
	s := newServer(t, hang, broken, reply("finally"))
	c := client(t, s, func(c *Config) { c.Timeout = 300 * time.Millisecond })
	r, err := c.Complete(context.Background(), userTurn)
	if err != nil || r.Text != "finally" || s.requests() != 3 {
		t.Fatalf("reply %q, err %v, %d requests", r.Text, err, s.requests())
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	s := newServer(t, status(503, "30"))
	c := client(t, s, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := c.Complete(ctx, userTurn)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > time.Second {
		t.Fatalf("err %v after %s", err, time.Since(t0))
	}
}

func TestVerifyUsesAJSONSchema(t *testing.T) {
	s := newServer(t, reply(`{"success": false, "summary": "The file was not saved."}`), reply("not json"))
	c := client(t, s, nil)
	v, u, err := c.Verify(context.Background(), userTurn)
	if err != nil || v.Success || v.Summary != "The file was not saved." || u.Total != 120 {
		t.Fatalf("verdict %+v %+v %v", v, u, err)
	}
	var sent struct {
		ResponseFormat struct {
			Type       string
			JSONSchema struct {
				Name   string
				Strict bool
				Schema struct {
					Properties map[string]any
					Required   []string
				}
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	json.Unmarshal(s.bodies[0], &sent)
	rf := sent.ResponseFormat
	if rf.Type != "json_schema" || !rf.JSONSchema.Strict || rf.JSONSchema.Schema.Properties["success"] == nil || rf.JSONSchema.Schema.Properties["summary"] == nil {
		t.Fatalf("response_format = %+v (%s)", rf, s.bodies[0])
	}
	if _, _, err := c.Verify(context.Background(), userTurn); !errors.Is(err, errdefs.ErrInvalid) || s.requests() != 1+verifyAttempts {
		t.Fatalf("non-JSON verdict = %v after %d requests, want an error after %d", err, s.requests()-1, verifyAttempts)
	}
}

// TestHiccupsAreRetried: what providers send now and then under load, an
// answer without choices and a completion check that is not the verdict's
// JSON, is asked again with backoff instead of pausing the task.
func TestHiccupsAreRetried(t *testing.T) {
	empty := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[]}`))
	}
	s := newServer(t, empty, empty, reply("at last"))
	r, err := client(t, s, nil).Complete(context.Background(), userTurn)
	if err != nil || r.Text != "at last" || s.requests() != 3 {
		t.Fatalf("reply %q, err %v, %d requests", r.Text, err, s.requests())
	}
	s = newServer(t, reply("Yes, it is done."), reply(`{"success": true, "summary": "Saved."}`))
	v, u, err := client(t, s, nil).Verify(context.Background(), userTurn)
	if err != nil || !v.Success || s.requests() != 2 || u.Total != 240 {
		t.Fatalf("verdict %+v, usage %+v, err %v, %d requests", v, u, err, s.requests())
	}
}

func TestModelsAndConnectionTest(t *testing.T) {
	s := newServer(t, reply(""))
	c := client(t, s, nil)
	models, err := c.Models(context.Background())
	if err != nil || len(models) != 2 || models[0].ID != "gpt-other" {
		t.Fatalf("models %+v, %v", models, err)
	}
	if err := c.Test(context.Background()); err != nil {
		t.Fatal(err)
	}
	other := client(t, s, func(c *Config) { c.Model = "gpt-missing" })
	if err := other.Test(context.Background()); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("test with an unlisted model = %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, "junk": 0, "99999": 5 * time.Minute,
		now.Add(10 * time.Second).Format(http.TimeFormat): 10 * time.Second,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

func pngOf(w, h int) []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h)))
	return b.Bytes()
}

func TestNewImageDownscalesToTheCap(t *testing.T) {
	img, err := NewImage("png", pngOf(2560, 1600), 1280, 800)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := strings.CutPrefix(img.DataURL(), "data:image/jpeg;base64,")
	if !ok || img.Width != 1280 || img.Height != 800 {
		t.Fatalf("url %.40s, %dx%d", img.DataURL(), img.Width, img.Height)
	}
	raw, _ := base64.StdEncoding.DecodeString(data)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil || format != "jpeg" || cfg.Width != 1280 || cfg.Height != 800 {
		t.Fatalf("%s %dx%d, %v", format, cfg.Width, cfg.Height, err)
	}
	small, _ := NewImage("png", pngOf(640, 400), 1280, 800)
	if !strings.HasPrefix(small.DataURL(), "data:image/png;base64,") || small.Width != 640 {
		t.Fatal("an image within the cap was re-encoded")
	}
}

// TestCompactKeepsTheLastImages: the newest images stay, in tool results
// too, and the older ones become notes; the input is not modified.
func TestCompactKeepsTheLastImages(t *testing.T) {
	var msgs []Message
	for i := range 10 {
		img, _ := NewImage("png", pngOf(4, 4), 0, 0)
		user := UserMessage(Text("step"), ImageBlock(img))
		if i%2 == 1 {
			// The screen in a native call's result.
			user = UserMessage(Block{Type: BlockToolResult, Result: &ToolResult{CallID: "c", Content: []Block{Text("done"), ImageBlock(img)}}}, Text("step"))
		}
		msgs = append(msgs, user, AssistantText(strings.Repeat("x", i)))
	}
	out := Compact(msgs, 3)
	images := 0
	for i, m := range out {
		if m.HasImage() {
			images++
			if i < len(out)-6 {
				t.Fatalf("an old image at message %d survived", i)
			}
		}
	}
	if images != 3 || countImages(out) != 3 {
		t.Fatalf("%d images kept, want 3", images)
	}
	if countImages(msgs) != 10 || msgs[2].Content[0].Result.Content[1].Type != BlockImage {
		t.Fatal("Compact modified its input")
	}
	if out[0].Content[1].Text != omittedNote || !out[0].Content[1].wasImage {
		t.Fatalf("an old image became %+v", out[0].Content[1])
	}
}

func TestCost(t *testing.T) {
	prices := PriceTable{"gpt-test": {PromptPerMTok: 2, CompletionPerMTok: 8}, "claude-*": {PromptPerMTok: 3, CompletionPerMTok: 15}}
	if usd, ok := prices.Cost(TypeOpenAICompatible, "gpt-test", Usage{Prompt: 1_000_000, Completion: 500_000}); !ok || usd != 6 {
		t.Fatalf("cost = %v, %v", usd, ok)
	}
	if usd, ok := prices.Cost(TypeOpenAICompatible, "claude-sonnet-4", Usage{Prompt: 1_000_000}); !ok || usd != 3 {
		t.Fatalf("prefix cost = %v, %v", usd, ok)
	}
	if _, ok := prices.Cost(TypeOpenAICompatible, "unknown", Usage{Prompt: 1}); ok {
		t.Fatal("an unknown model has a price")
	}
	fromSettings := PricesFrom(map[string]config.ModelPrice{"gpt-test": {PromptPerMTok: 4}})
	if usd, ok := fromSettings.Cost(TypeOpenAICompatible, "gpt-test", Usage{Prompt: 500_000}); !ok || usd != 2 {
		t.Fatalf("settings prices: %v, %v", usd, ok)
	}
}

// TestChatBodyIsWhatJSONMarshalWrites: splicing the images in gives the
// very bytes json.Marshal gives, for data URLs, URLs that need escaping,
// several images and text that looks like a placeholder.
func TestChatBodyIsWhatJSONMarshalWrites(t *testing.T) {
	img := func(url string) openai.ChatMessagePart {
		return openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: url, Detail: openai.ImageURLDetailHigh}}
	}
	text := func(s string) openai.ChatMessagePart {
		return openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: s}
	}
	req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
		{Role: "system", Content: "You operate a computer <&>"},
		{Role: "user", MultiContent: []openai.ChatMessagePart{text("Step 1"), img("data:image/png;base64,iVBORw0KGgo+/=")}},
		{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "mouse_click", Arguments: `{"x":1}`}}}},
		{Role: "tool", ToolCallID: "c1", Content: "clicked"},
		{Role: "user", MultiContent: []openai.ChatMessagePart{
			text(`"hivecrew-image-0000000000000000-0"`), img(`https://example.com/a"b\c<d>.png`), img(`https://example.com/q"q.png`), img(`https://example.com/x<y.png`), img("data:image/jpeg;base64,/9j/4AAQ"), text("é ✓"),
		}},
	}, Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "mouse_click", Parameters: json.RawMessage(`{"type":"object"}`)}}}}
	c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		want, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.be.(*chatBackend).chatBody(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(b.reader())
		if err != nil || int64(len(got)) != b.len() {
			t.Fatalf("read %d bytes of %d: %v", len(got), b.len(), err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: chatBody:\n%s\njson.Marshal:\n%s", what, got, want)
		}
	}
	check("first request")
	if req.Messages[1].MultiContent[1].ImageURL.URL != "data:image/png;base64,iVBORw0KGgo+/=" {
		t.Error("chatBody changed the caller's messages")
	}
	wire := &c.be.(*chatBackend).wire
	first := wire.data[1]
	check("the same again, from the cache")
	if &wire.data[1][0] != &first[0] {
		t.Error("an unchanged message was marshaled again")
	}
	// The next step: one message more, and the first screenshot replaced
	// by a note; a message that changed is not taken from the cache.
	req.Messages = append(slices.Clone(req.Messages), openai.ChatCompletionMessage{Role: "tool", ToolCallID: "c2", Content: "typed"})
	req.Messages[1] = openai.ChatCompletionMessage{Role: "user", MultiContent: []openai.ChatMessagePart{text("Step 1"), text("[an earlier screenshot]")}}
	req.Messages[3].Content = "clicked twice"
	check("the next step")
	req.Messages = req.Messages[:2]
	check("a shorter conversation")
	req.Model = "another"
	check("another model")
	req.Tools = nil
	check("no tools")
}

// TestSameMessageComparesEveryField changes each field of a message in
// turn (found by reflection, so a field go-openai adds is not missed) and
// expects sameMessage to notice.
func TestSameMessageComparesEveryField(t *testing.T) {
	base := func() openai.ChatCompletionMessage {
		one := 1
		return openai.ChatCompletionMessage{Role: "a", Content: "a", Refusal: "a", Name: "a", ReasoningContent: "a", ToolCallID: "a",
			FunctionCall: &openai.FunctionCall{Name: "a", Arguments: "a"},
			ToolCalls:    []openai.ToolCall{{Index: &one, ID: "a", Type: "a", Function: openai.FunctionCall{Name: "a", Arguments: "a"}}},
			MultiContent: []openai.ChatMessagePart{{Type: "a", Text: "a", ImageURL: &openai.ChatMessageImageURL{URL: "a", Detail: "a"}}}}
	}
	if !sameMessage(base(), base()) {
		t.Fatal("equal messages compare unequal")
	}
	// mutate changes the n-th string or integer found under v.
	var mutate func(v reflect.Value, n *int) bool
	mutate = func(v reflect.Value, n *int) bool {
		switch v.Kind() {
		case reflect.String, reflect.Int:
			if *n > 0 {
				*n--
				return false
			}
			if v.Kind() == reflect.String {
				v.SetString("b")
			} else {
				v.SetInt(2)
			}
			return true
		case reflect.Pointer:
			return mutate(v.Elem(), n)
		case reflect.Slice:
			for i := range v.Len() {
				if mutate(v.Index(i), n) {
					return true
				}
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if mutate(v.Field(i), n) {
					return true
				}
			}
		default:
			t.Fatalf("a field of kind %s: teach this test and sameMessage about it", v.Kind())
		}
		return false
	}
	leaves := 0
	for ; ; leaves++ {
		m, k := base(), leaves
		if !mutate(reflect.ValueOf(&m).Elem(), &k) {
			break
		}
		if sameMessage(base(), m) {
			t.Errorf("field %d changed unnoticed: %+v", leaves, m)
		}
	}
	if leaves < 15 {
		t.Fatalf("found %d fields, want every one", leaves)
	}
	for what, change := range map[string]func(*openai.ChatCompletionMessage){
		"no function call":  func(m *openai.ChatCompletionMessage) { m.FunctionCall = nil },
		"no index":          func(m *openai.ChatCompletionMessage) { m.ToolCalls[0].Index = nil },
		"no image":          func(m *openai.ChatCompletionMessage) { m.MultiContent[0].ImageURL = nil },
		"another tool call": func(m *openai.ChatCompletionMessage) { m.ToolCalls = append(m.ToolCalls, m.ToolCalls[0]) },
		"no parts":          func(m *openai.ChatCompletionMessage) { m.MultiContent = nil },
		"empty parts":       func(m *openai.ChatCompletionMessage) { m.MultiContent = []openai.ChatMessagePart{} },
	} {
		m := base()
		change(&m)
		if sameMessage(base(), m) {
			t.Errorf("%s: unnoticed", what)
		}
	}
}

// TestCacheAwareCost: tokens read from and written to the prompt cache
// cost the price given for them, else the provider type's share of the
// prompt price.
func TestCacheAwareCost(t *testing.T) {
	read := 0.3
	prices := PriceTable{"claude-sonnet-4-5": {PromptPerMTok: 3, CompletionPerMTok: 15}, "gpt-5": {PromptPerMTok: 1.25, CompletionPerMTok: 10, CacheReadPerMTok: &read}}
	u := Usage{Prompt: 1_000_000, Completion: 100_000, CacheRead: 600_000, CacheWrite: 200_000}
	// Claude: 200k fresh at 3, 600k read at 0.3, 200k written at 3.75, 100k out at 15.
	if usd, ok := prices.Cost(TypeAnthropic, "claude-sonnet-4-5", u); !ok || math.Abs(usd-(0.6+0.18+0.75+1.5)) > 1e-9 {
		t.Fatalf("anthropic cost %v", usd)
	}
	// OpenAI with its own cached price: 400k fresh... written tokens cost
	// the prompt price (OpenAI bills no writes).
	if usd, ok := prices.Cost(TypeOpenAI, "gpt-5", u); !ok || math.Abs(usd-(0.25+0.18+0.25+1.0)) > 1e-9 {
		t.Fatalf("openai cost %v", usd)
	}
	// Without cache use, the plain price.
	if usd, _ := prices.Cost(TypeAnthropic, "claude-sonnet-4-5", Usage{Prompt: 1_000_000}); usd != 3 {
		t.Fatalf("plain cost %v", usd)
	}
}
