// Package webtools gives agents web search and web reading from the host
// (issue 19.3): web_search through the search backend the user configured
// (SearXNG, or the Brave Search API with a key), and read_webpage, which
// fetches a page and extracts its article as Markdown.
//
// Libraries: codeberg.org/readeck/go-readability/v2 (the maintained fork
// of go-shiori's port of Mozilla's Readability) finds the article, and
// github.com/JohannesKaufmann/html-to-markdown/v2 writes it as Markdown.
//
// The tools are offered only to tasks whose network policy is internet: an
// offline task's agent gets neither, so it stays offline. read_webpage
// fetches what the model names, and the model may have been told what to
// name by a hostile page, so it follows the egress policy of internet-mode
// VMs (config.EgressRefused): no loopback, no private or link-local range,
// no address of the host itself, unless the user's allowlist names it. The
// check is made on the address actually dialled, for every connection and
// redirect, so a name that resolves to 127.0.0.1 or a redirect to
// 169.254.169.254 is refused. No proxy from the environment is used (it
// would dial on the agent's behalf where the check cannot see). The search
// backend is the user's own choice and may be local (SearXNG usually is);
// its queries come from the model but its address does not.
package webtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	readability "codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
)

// Bounds.
const (
	FetchTimeout = 30 * time.Second
	MaxPage      = 5 << 20 // bytes read of a page
	MaxMarkdown  = 12000   // characters of a page given per call
	MaxResults   = 10      // search results given
	maxRedirects = 5
	maxSearch    = 1 << 20 // bytes read of a search answer
)

// Search is the configured search backend.
type Search struct {
	// Backend is "searxng" or "brave" ("": no search).
	Backend string
	// URL is SearXNG's address, or the Brave API's (default its own).
	URL    string
	APIKey string
}

// KeyURL is where the search sends its API key: the Brave API's address
// (URL, else BraveURL), or "" when it sends none (no key, or SearXNG,
// which is given none).
func (s Search) KeyURL() string {
	if s.Backend != "brave" || s.APIKey == "" {
		return ""
	}
	return s.braveURL()
}

// braveURL is the Brave API's address: URL, else BraveURL.
func (s Search) braveURL() string {
	if s.URL == "" {
		return BraveURL
	}
	return s.URL
}

// Backends are the search backends known.
var Backends = []string{"searxng", "brave"}

// BraveURL is the Brave Search API's endpoint.
const BraveURL = "https://api.search.brave.com/res/v1/web/search"

// Tools are the web tools for a task: web_search when a backend is
// configured, and read_webpage. allow are the egress allowlist's networks.
func Tools(search Search, allow []*net.IPNet) []agent.HostTool {
	var out []agent.HostTool
	if search.Backend != "" {
		client := &http.Client{Timeout: FetchTimeout}
		out = append(out, agent.HostTool{
			Name:        config.WebSearch,
			Description: "Search the web (from the host, not the VM). Returns titles, addresses and snippets; read a result with read_webpage.",
			Params:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":400},"count":{"type":"integer","minimum":1,"maximum":10}},"required":["query"],"additionalProperties":false}`),
			Timeout:     FetchTimeout,
			Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var in struct {
					Query string `json:"query"`
					Count int    `json:"count"`
				}
				if err := json.Unmarshal(raw, &in); err != nil {
					return "", err
				}
				return search.run(ctx, client, in.Query, in.Count)
			},
		})
	}
	fetch := Fetcher(allow)
	out = append(out, agent.HostTool{
		Name:        config.ReadWebpage,
		Description: "Read a web page (fetched by the host, not the VM) as Markdown: its main text, without menus and ads. Long pages come in parts: pass offset to read on.",
		Params:      json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","minLength":1,"maxLength":2048},"offset":{"type":"integer","minimum":0}},"required":["url"],"additionalProperties":false}`),
		Timeout:     FetchTimeout + 5*time.Second,
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var in struct {
				URL    string `json:"url"`
				Offset int    `json:"offset"`
			}
			if err := json.Unmarshal(raw, &in); err != nil {
				return "", err
			}
			return Read(ctx, fetch, in.URL, in.Offset)
		},
	})
	return out
}

// result is one search result.
type result struct{ title, url, snippet string }

func (s Search) run(ctx context.Context, client *http.Client, query string, count int) (string, error) {
	if count <= 0 || count > MaxResults {
		count = 5
	}
	var req *http.Request
	var err error
	switch s.Backend {
	case "searxng":
		u := strings.TrimRight(s.URL, "/") + "/search?" + url.Values{"q": {query}, "format": {"json"}}.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	case "brave":
		u := s.braveURL() + "?" + url.Values{"q": {query}, "count": {fmt.Sprint(count)}}.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			req.Header.Set("X-Subscription-Token", s.APIKey)
		}
	default:
		return "", fmt.Errorf("unknown search backend %q", s.Backend)
	}
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("the search backend (%s) did not answer: %w", s.Backend, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearch))
	if err != nil {
		return "", fmt.Errorf("the search backend's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the search backend (%s) answered %s: %s", s.Backend, resp.Status, oneLine(string(body), 200))
	}
	var results []result
	switch s.Backend {
	case "searxng":
		var a struct {
			Results []struct {
				Title, URL, Content string
			} `json:"results"`
		}
		if err := json.Unmarshal(body, &a); err != nil {
			return "", fmt.Errorf("the search backend's answer is not SearXNG's JSON (is format=json enabled in its settings.yml?): %v", err)
		}
		for _, r := range a.Results {
			results = append(results, result{r.Title, r.URL, r.Content})
		}
	case "brave":
		var a struct {
			Web struct {
				Results []struct {
					Title, URL, Description string
				} `json:"results"`
			} `json:"web"`
		}
		if err := json.Unmarshal(body, &a); err != nil {
			return "", fmt.Errorf("the search backend's answer is not Brave's JSON: %v", err)
		}
		for _, r := range a.Web.Results {
			results = append(results, result{r.Title, r.URL, r.Description})
		}
	}
	if len(results) == 0 {
		return fmt.Sprintf("No results for %q.", query), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Results for %q:\n", query)
	for i, r := range results[:min(len(results), count)] {
		fmt.Fprintf(&b, "%d. %s\n   %s\n   %s\n", i+1, oneLine(r.title, 200), oneLine(r.url, 500), oneLine(r.snippet, 400))
	}
	return b.String(), nil
}

// Fetcher is the HTTP client of read_webpage: every connection it makes is
// checked against the egress policy, redirects are bounded, and no proxy
// is used.
func Fetcher(allow []*net.IPNet) *http.Client {
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip := net.ParseIP(host)
			if ip == nil {
				return fmt.Errorf("refused: %q is not an address", host)
			}
			if why := config.EgressRefused(ip, allow); why != "" {
				return &refusedError{why}
			}
			return nil
		},
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dialer.DialContext,
			TLSHandshakeTimeout:    10 * time.Second,
			ResponseHeaderTimeout:  FetchTimeout,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("a redirect to %s: only http and https are read", req.URL.Scheme)
			}
			return nil
		},
	}
}

type refusedError struct{ why string }

func (e *refusedError) Error() string { return "refused by the egress policy: " + e.why }

// Read fetches a page and returns its article as Markdown, from offset.
func Read(ctx context.Context, client *http.Client, raw string, offset int) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) address", oneLine(raw, 200))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; Hivecrew read_webpage)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1")
	resp, err := client.Do(req)
	if err != nil {
		var ref *refusedError
		if errors.As(err, &ref) {
			return "", ref
		}
		return "", fmt.Errorf("could not fetch %s: %v", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return "", fmt.Errorf("%s answered %s", u.Redacted(), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxPage))
	if err != nil {
		return "", fmt.Errorf("reading %s: %v", u.Redacted(), err)
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var title, text string
	switch {
	case ctype == "text/html" || ctype == "application/xhtml+xml" || ctype == "":
		title, text, err = article(body, resp.Request.URL)
		if err != nil {
			return "", fmt.Errorf("%s: no readable text: %v", u.Redacted(), err)
		}
	case strings.HasPrefix(ctype, "text/") || ctype == "application/json":
		text = strings.ToValidUTF8(string(body), "�")
	default:
		return "", fmt.Errorf("%s is %s, not a page to read", u.Redacted(), ctype)
	}
	runes := []rune(text)
	if offset < 0 || (offset > 0 && offset >= len(runes)) {
		return "", fmt.Errorf("offset %d is past the end: the page has %d characters", offset, len(runes))
	}
	end := min(len(runes), offset+MaxMarkdown)
	var b strings.Builder
	if title != "" {
		fmt.Fprintf(&b, "# %s\n", oneLine(title, 300))
	}
	fmt.Fprintf(&b, "Address: %s\n", resp.Request.URL.Redacted())
	if offset > 0 || end < len(runes) {
		fmt.Fprintf(&b, "Characters %d to %d of %d.", offset, end, len(runes))
		if end < len(runes) {
			fmt.Fprintf(&b, " Read on with offset %d.", end)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	b.WriteString(string(runes[offset:end]))
	return b.String(), nil
}

// article extracts a page's article as Markdown.
func article(body []byte, base *url.URL) (title, md string, err error) {
	art, err := readability.FromReader(strings.NewReader(string(body)), base)
	if err != nil {
		return "", "", err
	}
	if art.Node == nil {
		return "", "", errors.New("the page has no article text")
	}
	out, err := htmltomarkdown.ConvertNode(art.Node, converter.WithDomain(base.Scheme+"://"+base.Host))
	if err != nil {
		return "", "", err
	}
	return art.Title(), strings.TrimSpace(string(out)), nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
