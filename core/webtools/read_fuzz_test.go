package webtools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// page answers every request with one body (no socket: the fuzzer runs
// Read many thousand times).
type page struct {
	body  []byte
	ctype string
}

func (p page) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {p.ctype}},
		Body: io.NopCloser(bytes.NewReader(p.body)), Request: r}, nil
}

var readOn = regexp.MustCompile(`Read on with offset (\d+)\.`)

// FuzzRead: read_webpage turns whatever a web page holds (written by
// anyone, and maybe aimed at the agent) into text for the model. Whatever
// the bytes and the type, Read does not panic or hang; its answer is UTF-8,
// gives at most MaxMarkdown characters of the page, says where it is from,
// and an offset it offers to read on from works.
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		articleHTML,
		"<html><body><p>" + strings.Repeat("word ", 5000) + "</p></body></html>",
		"<table><tr><td><table><tr><td><div><div><div><p>deep</p></div></div></div></td></tr></table></td></tr></table>",
		"<html><head><title>\xff\xfe</title></head><body><pre>\x00\x01</pre><a href='javascript:alert(1)'>x</a></body></html>",
		"<svg><script>alert(1)</script></svg><noscript><p>no</p></noscript>",
		`{"key": "value", "list": [1, 2, 3]}`,
		"plain text é\xff",
	} {
		for _, ctype := range []byte{0, 1, 2, 3} {
			f.Add([]byte(seed), ctype, uint16(0))
		}
	}
	types := []string{"text/html; charset=utf-8", "", "text/plain", "application/json", "application/pdf"}
	f.Fuzz(func(t *testing.T, body []byte, ctype byte, offset uint16) {
		p := page{body: body, ctype: types[int(ctype)%len(types)]}
		client := &http.Client{Transport: p}
		read := func(offset int) (string, error) {
			timer := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("Read of %q (%s) takes over 5s", body, p.ctype)) })
			defer timer.Stop()
			return Read(context.Background(), client, "https://example.com/page", offset)
		}
		out, err := read(int(offset))
		if err != nil {
			return
		}
		if !utf8.ValidString(out) {
			t.Fatalf("not UTF-8: %q", out)
		}
		head, text, ok := strings.Cut(out, "\n\n")
		if !ok || !strings.Contains(head, "Address: https://example.com/page") {
			t.Fatalf("no header: %q", out)
		}
		if n := utf8.RuneCountInString(text); n > MaxMarkdown {
			t.Fatalf("%d characters, over %d", n, MaxMarkdown)
		}
		if strings.HasPrefix(p.ctype, "text/plain") || p.ctype == "application/json" {
			whole := []rune(strings.ToValidUTF8(string(body), "�"))
			if want := string(whole[int(offset):min(len(whole), int(offset)+MaxMarkdown)]); text != want {
				t.Fatalf("plain text from %d = %q, want %q", offset, text, want)
			}
		}
		if m := readOn.FindStringSubmatch(head); m != nil {
			next, _ := strconv.Atoi(m[1])
			if next <= int(offset) {
				t.Fatalf("read on from %d after %d", next, offset)
			}
			if _, err := read(next); err != nil {
				t.Fatalf("the offered offset %d fails: %v", next, err)
			}
		}
	})
}
