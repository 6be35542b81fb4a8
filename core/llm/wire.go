package llm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// chatBody marshals a chat completion request into pieces to be sent one
// after the other (not copied together: a request carries megabytes of
// screenshots): the request around an empty message list, and the
// messages, reusing the JSON of those the previous request sent in the
// same places, and the previous request's JSON for the rest when only
// the messages changed.
func (b *chatBackend) chatBody(req openai.ChatCompletionRequest) (body, error) {
	msgs := req.Messages
	req.Messages = nil
	w := &b.wire
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head == nil || !reflect.DeepEqual(w.req, req) {
		req.Messages = []openai.ChatCompletionMessage{}
		head, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		req.Messages = nil
		const key = `"messages":[]`
		at := bytes.Index(head, []byte(key))
		if at < 0 {
			return nil, fmt.Errorf("marshal the request: no message list in %.80s", head)
		}
		at += len(key) - 1 // before the closing bracket
		w.req, w.head, w.at = req, head, at
	}
	data := make([][]byte, len(msgs))
	marks := make([]bool, len(msgs))
	out := make(body, 0, 2*len(msgs)+2)
	out = append(out, w.head[:w.at])
	for i, m := range msgs {
		// Cache breakpoints (CacheMarks): the system prompt and the newest
		// message, so the next request reads all before it from the cache.
		marks[i] = b.c.cfg.CacheMarks && (i == len(msgs)-1 || (i == 0 && m.Role == openai.ChatMessageRoleSystem))
		if i < len(w.msgs) && w.marks[i] == marks[i] && sameMessage(w.msgs[i], m) {
			data[i] = w.data[i]
		} else {
			var err error
			if data[i], err = marshalMessage(m, marks[i]); err != nil {
				return nil, err
			}
		}
		if i > 0 {
			out = append(out, comma)
		}
		out = append(out, data[i])
	}
	w.msgs, w.data, w.marks = slices.Clone(msgs), data, marks
	return append(out, w.head[w.at:]), nil
}

var comma = []byte{','}

// body is a request body in pieces.
type body [][]byte

func (b body) len() int64 {
	n := 0
	for _, p := range b {
		n += len(p)
	}
	return int64(n)
}

func (b body) reader() io.Reader { return &bodyReader{b: b} }

// bodyReader reads a body's pieces in turn.
type bodyReader struct {
	b   body
	off int // into b[0]
}

func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.b) > 0 {
		k := copy(p[n:], r.b[0][r.off:])
		n += k
		if r.off += k; r.off == len(r.b[0]) {
			r.b, r.off = r.b[1:], 0
		}
	}
	if n == 0 && len(r.b) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// wireCache keeps the messages a client sent last and their JSON: a
// conversation is sent again with every step, one message longer, and
// marshaling it anew each time grew to most of a step's cost.
type wireCache struct {
	// mu guards everything below.
	mu    sync.Mutex
	msgs  []openai.ChatCompletionMessage
	data  [][]byte
	marks []bool // which carry a cache breakpoint
	// req is the last request without its messages, head its JSON with
	// an empty message list, whose closing bracket is at head[at].
	req  openai.ChatCompletionRequest
	head []byte
	at   int
}

// sameMessage reports whether a and b have equal fields, all of them
// (TestSameMessageComparesEveryField keeps it so). Strings that share
// their bytes, as a conversation's do from one step to the next, compare
// at once.
func sameMessage(a, b openai.ChatCompletionMessage) bool {
	if a.Role != b.Role || a.Content != b.Content || a.Refusal != b.Refusal || a.Name != b.Name ||
		a.ReasoningContent != b.ReasoningContent || a.ToolCallID != b.ToolCallID ||
		(a.FunctionCall == nil) != (b.FunctionCall == nil) || (a.FunctionCall != nil && *a.FunctionCall != *b.FunctionCall) ||
		len(a.ToolCalls) != len(b.ToolCalls) || len(a.MultiContent) != len(b.MultiContent) || (a.MultiContent == nil) != (b.MultiContent == nil) {
		return false
	}
	for i, x := range a.ToolCalls {
		y := b.ToolCalls[i]
		if x.ID != y.ID || x.Type != y.Type || x.Function != y.Function ||
			(x.Index == nil) != (y.Index == nil) || (x.Index != nil && *x.Index != *y.Index) {
			return false
		}
	}
	for i, x := range a.MultiContent {
		y := b.MultiContent[i]
		if x.Type != y.Type || x.Text != y.Text || (x.ImageURL == nil) != (y.ImageURL == nil) ||
			(x.ImageURL != nil && *x.ImageURL != *y.ImageURL) {
			return false
		}
	}
	return true
}

// marshalMessage marshals one message. Screenshots are most of a request
// (a few hundred KB of base64 each), and encoding/json would escape each
// one and then scan it twice more (go-openai's messages marshal
// themselves, and json re-validates and compacts what they return). So
// images travel through json.Marshal as short placeholders and are spliced
// in afterwards, verbatim: a base64 data URL needs no escaping. A URL that
// would need escaping is left to json.Marshal.
func marshalMessage(m openai.ChatCompletionMessage, mark bool) ([]byte, error) {
	var urls []string
	var prefix string
	if len(m.MultiContent) > 0 {
		parts := slices.Clone(m.MultiContent)
		for j, p := range parts {
			if p.ImageURL == nil || !jsonSafe(p.ImageURL.URL) {
				continue
			}
			if prefix == "" {
				var nonce [8]byte
				rand.Read(nonce[:])
				prefix = "hivecrew-image-" + hex.EncodeToString(nonce[:]) + "-"
			}
			u := *p.ImageURL
			u.URL = fmt.Sprint(prefix, len(urls))
			urls = append(urls, p.ImageURL.URL)
			parts[j].ImageURL = &u
		}
		m.MultiContent = parts
	}
	data, err := json.Marshal(m)
	if err == nil && mark {
		data, err = withCacheMark(data)
	}
	if err != nil || len(urls) == 0 {
		return data, err
	}
	size := len(data)
	for _, u := range urls {
		size += len(u)
	}
	out := make([]byte, 0, size)
	for i, u := range urls {
		quoted := fmt.Sprintf("%q", fmt.Sprint(prefix, i))
		k := bytes.Index(data, []byte(quoted))
		if k < 0 {
			return nil, fmt.Errorf("marshal the request: image %d went missing", i)
		}
		out = append(out, data[:k+1]...)
		out = append(out, u...)
		data = data[k+len(quoted)-1:]
	}
	return append(out, data...), nil
}

// withCacheMark puts a cache breakpoint ("cache_control": {"type":
// "ephemeral"}, as Anthropic's models take it through OpenAI-compatible
// gateways) on the last content part of a marshaled message, turning a
// text content into one text part.
func withCacheMark(data []byte) ([]byte, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		return nil, err
	}
	var parts []map[string]any
	var text string
	switch c := msg["content"]; {
	case len(c) == 0 || string(c) == "null":
		return data, nil
	case json.Unmarshal(c, &text) == nil:
		if text == "" {
			return data, nil
		}
		parts = []map[string]any{{"type": "text", "text": text}}
	case json.Unmarshal(c, &parts) != nil || len(parts) == 0:
		return data, nil
	}
	parts[len(parts)-1]["cache_control"] = map[string]string{"type": "ephemeral"}
	content, err := json.Marshal(parts)
	if err != nil {
		return nil, err
	}
	msg["content"] = content
	return json.Marshal(msg)
}

// AcceptsCacheMarks says whether cache breakpoints are worth sending: to
// Anthropic's Claude models through a gateway (OpenRouter, LiteLLM and the
// like pass them on). Anthropic's own OpenAI-compatible endpoint does not
// take them, and other models' providers cache prompt prefixes by
// themselves.
func AcceptsCacheMarks(baseURL, model string) bool {
	u, err := url.Parse(baseURL)
	if err != nil || strings.EqualFold(u.Hostname(), "api.anthropic.com") {
		return false
	}
	return strings.Contains(strings.ToLower(model), "claude")
}

// jsonSafe reports whether encoding/json writes s as it is: printable
// ASCII without quotes, backslashes or the characters it escapes for HTML.
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// post sends a marshaled request to path under the base URL and reads the
// answer: a server-sent event stream goes to stream (when the request asked
// for one: stream is set), any other answer is decoded into out. Failures
// come back as go-openai's error types, as its own client returns them:
// *openai.APIError when the provider explained, *openai.RequestError
// otherwise.
func (c *Client) post(ctx context.Context, path string, b body, out any, stream func(io.Reader) error) (streamed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+path, b.reader())
	if err != nil {
		return false, err
	}
	req.ContentLength = b.len()
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(b.reader()), nil }
	req.Header.Set("Content-Type", "application/json")
	return c.send(req, out, stream)
}

// maxModelsBytes caps a /models answer (OpenRouter's is about 1 MB).
const maxModelsBytes = 32 << 20

// getJSON sends a GET of path under the base URL and decodes the answer.
func (c *Client) getJSON(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+path, nil)
	if err != nil {
		return err
	}
	_, err = c.send(req, out, nil)
	return err
}

// send adds the headers every request carries, sends req and reads a
// successful answer: an event stream into stream, when set, anything else
// decoded into out. A failed one is an *openai.APIError, or an
// *openai.RequestError when it is not in the OpenAI error shape.
func (c *Client) send(req *http.Request, out any, stream func(io.Reader) error) (streamed bool, err error) {
	req.Header.Set("Accept", "application/json")
	if stream != nil {
		req.Header.Set("Accept", "text/event-stream, application/json")
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	if c.cfg.Organization != "" {
		req.Header.Set("OpenAI-Organization", c.cfg.Organization)
	}
	res, err := c.doer.Do(req)
	if err != nil {
		return false, err
	}
	defer res.Body.Close()
	if res.StatusCode < http.StatusOK || res.StatusCode >= http.StatusBadRequest {
		data, err := io.ReadAll(io.LimitReader(res.Body, maxModelsBytes))
		if err != nil {
			return false, fmt.Errorf("read the error answer: %w", err)
		}
		var e openai.ErrorResponse
		if err := json.Unmarshal(data, &e); err != nil || e.Error == nil {
			return false, &openai.RequestError{HTTPStatus: res.Status, HTTPStatusCode: res.StatusCode, Err: err, Body: data}
		}
		e.Error.HTTPStatus, e.Error.HTTPStatusCode = res.Status, res.StatusCode
		return false, e.Error
	}
	if ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); stream != nil && ct == "text/event-stream" {
		return true, stream(res.Body)
	}
	return false, json.NewDecoder(io.LimitReader(res.Body, maxModelsBytes)).Decode(out)
}
