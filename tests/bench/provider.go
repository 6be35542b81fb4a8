package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/llm"
)

// provider is the bench's scripted OpenAI-compatible provider. It answers
// at once, or after think (a real model's time to answer: 1 to 6 s a
// step); either way nothing of it enters the figures, which count from its
// answer to the agent's next request. It answers with the
// script of the task whose marker ("[[name]]", in its description) the
// request carries, and records each exchange: when the request arrived,
// when its answer went out, and the request body's size.
type provider struct {
	URL string
	srv *httptest.Server

	// window, when set, is the model's context window in tokens: /models
	// says so, and a request that passes it (by llm.EstimateTokens) is
	// refused as a real provider does (context_length_exceeded).
	window int
	// think delays every answer (0: at once).
	think time.Duration

	// mu guards scripts, log, last and lastSegs.
	mu      sync.Mutex
	scripts map[string]script
	log     map[string][]exchange
	// last is each marker's previous agent request (not a summary or a
	// check), for the prefix the next one shares with it.
	last map[string][]byte
	// lastSegs is the same request's prompt in segments, for the tokens
	// the next one repeats at its start.
	lastSegs map[string][]segment
}

// exchange is one request and its answer.
type exchange struct {
	in, out time.Time
	bytes   int
	// images is how many screenshots the request carried as images, and
	// imageBytes their data URLs' size.
	images, imageBytes int
	// lastImage is a hash of the request's newest screenshot.
	lastImage uint64
	// check says the request was the completion check; summary that it
	// asked to condense the history; overflow that it was refused as
	// longer than the window.
	check, summary, overflow bool
	// prefix is how many bytes the request shares at its start with the
	// marker's previous agent request, of prevBytes, and cached the
	// tokens it repeats of it (what a prefix cache reads).
	prefix, prevBytes, cached int
	// promptTokens is the request's prompt as this provider's tokenizer
	// counts it, and answerTokens its answer's (both only with a window).
	promptTokens, answerTokens int
	// parts is an agent request's prompt by part (with a window).
	parts promptParts
}

// script answers a task's n-th request (from 1); check says it is the
// completion check. A non-nil hold delays the answer until it is closed
// or the client gives up.
type script func(n int, check bool) (msg openai.ChatCompletionMessage, hold <-chan struct{})

var markerRE = regexp.MustCompile(`^\[\[[A-Za-z0-9_-]{1,40}\]\]`)

// findMarker returns the first marker in a request body. It looks only
// where "[[" starts: a regular expression over a body of screenshots would
// cost the machine more than the helper's whole step.
func findMarker(body []byte) string {
	for i := 0; ; {
		k := bytes.Index(body[i:], []byte("[["))
		if k < 0 {
			return ""
		}
		i += k
		if m := markerRE.Find(body[i:min(len(body), i+44)]); m != nil {
			return string(m)
		}
		i += 2
	}
}

func newProvider() *provider {
	p := &provider{scripts: map[string]script{}, log: map[string][]exchange{}, last: map[string][]byte{}, lastSegs: map[string][]segment{}}
	p.srv = httptest.NewServer(p)
	p.URL = p.srv.URL + "/v1"
	return p
}

func (p *provider) close() { p.srv.Close() }

// set gives the tasks carrying marker their script.
func (p *provider) set(marker string, s script) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scripts[marker] = s
}

// exchanges returns what the tasks carrying marker sent.
func (p *provider) exchanges(marker string) []exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]exchange(nil), p.log[marker]...)
}

// count returns how many requests the tasks carrying marker sent.
func (p *provider) count(marker string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.log[marker])
}

const checkQuestion = "Was the task fully accomplished"

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		model := map[string]any{"id": "scripted", "object": "model"}
		if p.window > 0 {
			model["context_length"] = p.window
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{model}})
		return
	}
	in := time.Now()
	// Requests carry megabytes of screenshots: read them into reused
	// buffers, so the provider costs the machine little.
	buf := bodies.Get().(*bytes.Buffer)
	defer bodies.Put(buf)
	buf.Reset()
	buf.Grow(int(max(r.ContentLength, 0)))
	buf.ReadFrom(r.Body)
	body := buf.Bytes()
	marker := findMarker(body)
	check := bytes.Contains(body, []byte(checkQuestion))
	summary := bytes.Contains(body, []byte(summaryQuestion))
	promptTokens := 0
	if p.window > 0 {
		promptTokens = tokens(body)
	}
	overflow := p.window > 0 && promptTokens > p.window
	p.mu.Lock()
	s := p.scripts[marker]
	n := len(p.log[marker]) + 1
	images, imageBytes, last := dataURLs(body)
	ex := exchange{in: in, bytes: len(body), images: images, imageBytes: imageBytes,
		lastImage: maphash.Bytes(imageSeed, last), check: check, summary: summary, overflow: overflow, promptTokens: promptTokens}
	if p.window > 0 && !check && !summary {
		prompt := promptOf(body)
		prev := p.last[marker]
		ex.prefix, ex.prevBytes = commonPrefix(prev, prompt), len(prev)
		p.last[marker] = prompt
		ex.parts = chatParts(body)
		segs := chatSegments(body)
		ex.cached = cachedTokens(p.lastSegs[marker], segs)
		p.lastSegs[marker] = segs
	}
	p.log[marker] = append(p.log[marker], ex)
	p.mu.Unlock()
	if overflow {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, p.window, tokens(body))
		return
	}
	if p.think > 0 {
		select {
		case <-time.After(p.think):
		case <-r.Context().Done():
			return
		}
	}
	msg, hold := finish(n, check)
	switch {
	case summary:
		msg, hold = openai.ChatCompletionMessage{Role: "assistant", Content: summaryAnswer}, nil
	case s != nil:
		msg, hold = s(n, check)
	}
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
		ID: "bench", Object: "chat.completion", Model: "scripted",
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: "stop"}},
		Usage:   openai.Usage{PromptTokens: 1000, CompletionTokens: 20, TotalTokens: 1020},
	})
	out := time.Now()
	answer := 0
	if p.window > 0 {
		answer = llm.EstimateTokens(neutral([]openai.ChatCompletionMessage{msg})) * 8 / 7
	}
	p.mu.Lock()
	p.log[marker][n-1].out, p.log[marker][n-1].answerTokens = out, answer
	p.mu.Unlock()
}

var imageSeed = maphash.MakeSeed()

// summaryQuestion marks the agent's request to condense its history, and
// summaryAnswer is the scripted providers' answer to it.
const (
	summaryQuestion = "You condense the history"
	summaryAnswer   = "The agent opened xterm and typed numbered lines of text into it; it goes on typing."
)

// tokens counts a chat request's prompt tokens as this provider's
// tokenizer would: 8/7 of the agent's estimate (3.5 bytes a token where
// the agent assumes 4), so that the agent's margin is put to the test.
func tokens(body []byte) int {
	var req openai.ChatCompletionRequest
	if json.Unmarshal(body, &req) != nil {
		return 0
	}
	b, _ := json.Marshal(req.Tools)
	return (llm.EstimateTokens(neutral(req.Messages)) + len(b)/4) * 8 / 7
}

// promptOf renders a chat request as the model reads it, which is what a
// provider's prompt cache matches by prefix: the tools first (providers
// put them ahead of the conversation), then the messages in order. The
// order of the fields in the request's JSON plays no part.
func promptOf(body []byte) []byte {
	var req openai.ChatCompletionRequest
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	tools, _ := json.Marshal(req.Tools)
	messages, _ := json.Marshal(req.Messages)
	return append(tools, messages...)
}

// commonPrefix is how many bytes a and b share at their start.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// dataURLs counts the image data URLs in a request body and their bytes,
// and returns the last one.
func dataURLs(body []byte) (n, size int, last []byte) {
	const start = `"url":"data:image/`
	for {
		i := bytes.Index(body, []byte(start))
		if i < 0 {
			return n, size, last
		}
		body = body[i+len(start)-len("data:image/"):]
		end := bytes.IndexByte(body, '"')
		if end < 0 {
			return n, size, last
		}
		n, size, last = n+1, size+end, body[:end]
		body = body[end:]
	}
}

// finish is the script that ends a task on its first turn: a text answer,
// then a successful verdict.
func finish(_ int, check bool) (openai.ChatCompletionMessage, <-chan struct{}) {
	if check {
		b, _ := json.Marshal(map[string]any{"success": true, "summary": "Done."})
		return openai.ChatCompletionMessage{Role: "assistant", Content: string(b)}, nil
	}
	return openai.ChatCompletionMessage{Role: "assistant", Content: "I am done."}, nil
}

// clicking is the script of an agent that works without end: every turn
// clicks the middle of the screen.
func clicking(int, bool) (openai.ChatCompletionMessage, <-chan struct{}) {
	return toolCall("mouse_click", `{"x":640,"y":400}`), nil
}

// writing is the script of an agent at work in a terminal: the first turn
// opens xterm, every later turn types a line into it, so every step changes
// the screen: a line of text, and the whole window once it is full and
// scrolls. xterm draws cheaply, so the figures are Hivecrew's cost, not an
// application's.
func writing(n int, _ bool) (openai.ChatCompletionMessage, <-chan struct{}) {
	if n == 1 {
		return toolCall("open_app", `{"name":"xterm"}`), nil
	}
	args, _ := json.Marshal(map[string]string{"text": typedLine(n)})
	return toolCall("keyboard_type", string(args)), nil
}

// typedLine is the line the agent types into the terminal at step n.
func typedLine(n int) string {
	return fmt.Sprintf("Step %d: the quick brown fox jumps over the lazy dog, 0123456789.\n", n)
}

func toolCall(name, args string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{
		ID: "call-" + name, Type: "function", Function: openai.FunctionCall{Name: name, Arguments: args}}}}
}

// neutral reads chat messages as the agent's conversation, for its token
// estimate: their text, tool calls and images (of the size their data
// URL's header says).
func neutral(msgs []openai.ChatCompletionMessage) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		n := llm.Message{Role: llm.RoleUser}
		if m.Role == openai.ChatMessageRoleAssistant {
			n.Role = llm.RoleAssistant
		}
		if m.Content != "" {
			n.Content = append(n.Content, llm.Text(m.Content))
		}
		for _, p := range m.MultiContent {
			switch {
			case p.ImageURL != nil:
				w, h := imageSize(p.ImageURL.URL)
				n.Content = append(n.Content, llm.ImageBlock(&llm.Image{MediaType: "image/png", Width: w, Height: h}))
			default:
				n.Content = append(n.Content, llm.Text(p.Text))
			}
		}
		for _, c := range m.ToolCalls {
			n.Content = append(n.Content, llm.Block{Type: llm.BlockToolCall, Call: &llm.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)}})
		}
		out = append(out, n)
	}
	return out
}
