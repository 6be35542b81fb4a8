package llm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	openai "github.com/sashabaranov/go-openai"
)

// chatBody marshals a chat completion request. Screenshots are most of a
// request (a few hundred KB of base64 each), and encoding/json would
// escape each one and then scan it twice more (go-openai's messages
// marshal themselves, and json re-validates and compacts what they
// return). So images travel through json.Marshal as short placeholders
// and are spliced in afterwards, verbatim: a base64 data URL needs no
// escaping. A URL that would need escaping is left to json.Marshal.
func chatBody(req openai.ChatCompletionRequest) ([]byte, error) {
	var nonce [8]byte
	rand.Read(nonce[:])
	prefix := "hivecrew-image-" + hex.EncodeToString(nonce[:]) + "-"
	var urls []string
	msgs := slices.Clone(req.Messages)
	for i, m := range msgs {
		if len(m.MultiContent) == 0 {
			continue
		}
		parts := slices.Clone(m.MultiContent)
		for j, p := range parts {
			if p.ImageURL == nil || !jsonSafe(p.ImageURL.URL) {
				continue
			}
			u := *p.ImageURL
			u.URL = fmt.Sprint(prefix, len(urls))
			urls = append(urls, p.ImageURL.URL)
			parts[j].ImageURL = &u
		}
		msgs[i].MultiContent = parts
	}
	req.Messages = msgs
	data, err := json.Marshal(req)
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

// postChat sends a marshaled chat completion request and decodes the
// answer into resp. Failures come back as go-openai's error types, as its
// own client returns them: *openai.APIError when the provider explained,
// *openai.RequestError otherwise.
func (c *Client) postChat(ctx context.Context, body []byte, resp *openai.ChatCompletionResponse) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	res, err := c.doer.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode < http.StatusOK || res.StatusCode >= http.StatusBadRequest {
		data, err := io.ReadAll(res.Body)
		if err != nil {
			return fmt.Errorf("read the error answer: %w", err)
		}
		var e openai.ErrorResponse
		if err := json.Unmarshal(data, &e); err != nil || e.Error == nil {
			return &openai.RequestError{HTTPStatus: res.Status, HTTPStatusCode: res.StatusCode, Err: err, Body: data}
		}
		e.Error.HTTPStatus, e.Error.HTTPStatusCode = res.Status, res.StatusCode
		return e.Error
	}
	return json.NewDecoder(res.Body).Decode(resp)
}
