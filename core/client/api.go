package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
)

// call sends a JSON request (body may be nil) and decodes a JSON answer
// into out (may be nil); a status outside 2xx is an error of its class.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	return c.callBody(ctx, method, path, r, "application/json", out)
}

// callBody is call with a body of contentType as it is.
func (c *Client) callBody(ctx context.Context, method, path string, r io.Reader, contentType string, out any) error {
	resp, err := c.send(ctx, method, path, r, contentType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return decodeError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unreachable(err)
	}
	return resp, nil
}

func esc(s string) string { return url.PathEscape(s) }

// field is one multipart form field; a name may repeat.
type field struct{ name, value string }

// multipart streams fields and files to path and decodes the answer.
func (c *Client) multipart(ctx context.Context, path string, fields []field, files []string, out any) error {
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("input file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("input file %s is not a regular file", f)
		}
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for _, f := range fields {
				if f.value == "" {
					continue
				}
				if err := mw.WriteField(f.name, f.value); err != nil {
					return err
				}
			}
			for _, f := range files {
				part, err := mw.CreateFormFile("files", filepath.Base(f))
				if err != nil {
					return err
				}
				src, err := os.Open(f)
				if err != nil {
					return err
				}
				_, err = io.Copy(part, src)
				src.Close()
				if err != nil {
					return err
				}
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	resp, err := c.send(ctx, http.MethodPost, path, pr, mw.FormDataContentType())
	pr.Close()
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return decodeError(resp)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (c *Client) stream(ctx context.Context, path string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// optional gets a resource that may be absent (204 No Content: nil).
func optional[T any](ctx context.Context, c *Client, path string) (*T, error) {
	resp, err := c.send(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil, nil
	case http.StatusOK:
		var v T
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return nil, fmt.Errorf("GET %s: decode answer: %w", path, err)
		}
		return &v, nil
	}
	return nil, decodeError(resp)
}

// postWithFiles POSTs body as JSON, or with files as multipart: body's
// JSON in a part named part, and "files" parts.
func (c *Client) postWithFiles(ctx context.Context, path, part string, body any, files []string, out any) error {
	if len(files) == 0 {
		return c.call(ctx, http.MethodPost, path, body, out)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.multipart(ctx, path, []field{{part, string(b)}}, files, out)
}
