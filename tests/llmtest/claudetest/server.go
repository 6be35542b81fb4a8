package claudetest

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
)

// Versions are the anthropic-version values the server accepts: the
// long-standing one, and the one SDK v2 sends, which refuses temperature,
// top_p and top_k.
var Versions = []string{"2023-06-01", "2026-10-21"}

// version2026 is the API version without sampling parameters.
const version2026 = "2026-10-21"

// Defaults of the Server's settings.
var (
	DefaultModels     = []string{"claude-sonnet-4-5", "claude-opus-4-5"}
	DefaultZoomModels = []string{"claude-opus-4-5"}
)

const (
	DefaultContextTokens   = 200_000
	DefaultMaxOutputTokens = 64_000
	defaultCacheMinTokens  = 1024
	maxBodyBytes           = 32 << 20 // the API's request size limit
)

// Server is the scripted Messages API. Set its fields before the first
// request.
type Server struct {
	// URL is the base URL to give the SDK (option.WithBaseURL); it does
	// not end in /v1.
	URL string
	// Key, if set, is the only API key accepted; without it any non-empty
	// one is. It comes in x-api-key or as Authorization's bearer token
	// (SDK v2 sends it so).
	Key string
	// Models are the model ids the server knows (DefaultModels if empty).
	Models []string
	// ZoomModels are the models that take the computer_20251124 tool
	// (DefaultZoomModels if nil).
	ZoomModels []string
	// ContextTokens is the prompt size above which a request is "too long"
	// (DefaultContextTokens if 0).
	ContextTokens int
	// MaxOutputTokens is the largest max_tokens accepted
	// (DefaultMaxOutputTokens if 0).
	MaxOutputTokens int
	// CacheMinTokens is the minimum cacheable prefix per model; models not
	// listed have 1024. Nil means Anthropic's: 4096 for claude-opus-4-5,
	// 1024 for the others.
	CacheMinTokens map[string]int
	// Match, if set, picks the script of a request by name (the marker
	// given to Script) instead of by the markers it contains; "" or an
	// unknown name gets the default answers.
	Match func(body string) string

	// errorf is told of a script's turn the model could not have given.
	errorf  func(format string, args ...any)
	signKey []byte

	// imgMu guards decodedImages.
	imgMu         sync.Mutex
	decodedImages map[[32]byte]decoded

	// mu guards everything below.
	mu       sync.Mutex
	scripts  map[string]*script
	title    *Turn
	all      []*Request
	refusals []Refused
	cache    map[string]map[[32]byte]int
	seq      int
}

// Request is one accepted request to /v1/messages as the server received
// it, and what it answered.
type Request struct {
	// Path is the request's path and query (/v1/messages, or
	// /v1/messages?beta=true from older SDKs).
	Path string
	// Version is its anthropic-version.
	Version string
	Header  http.Header
	Body    string
	Model   string
	Stream  bool
	// Images are the request's images in the order they appear.
	Images []Image
	// Script is the marker of the script that answered, "" for the
	// default answers, TitleScript for a title request.
	Script string
	// Usage is what the server reported (zero for an error turn).
	Usage Usage
}

// TitleScript is Request.Script of a title request.
const TitleScript = "(title)"

// Image is an image of a request.
type Image struct {
	// Path locates it in the request, as the API's error messages do:
	// messages.3.content.0.tool_result.content.1.
	Path      string
	MediaType string
	Width     int
	Height    int
	// Bytes is the size of the decoded data.
	Bytes int
}

// Usage is the token accounting of an answer.
type Usage struct {
	InputTokens              int
	OutputTokens             int
	CacheCreationInputTokens int
	CacheReadInputTokens     int
	// Ephemeral5mInputTokens and Ephemeral1hInputTokens split
	// CacheCreationInputTokens by the TTL of the breakpoints written.
	Ephemeral5mInputTokens int
	Ephemeral1hInputTokens int
}

// Refused is a request the server refused as the real API would.
type Refused struct {
	Status  int
	Type    string
	Message string
	Path    string
	Body    string
}

// New starts a server, closed when the test ends; a scripted turn the
// model could not have given fails the test.
func New(t testing.TB) *Server {
	s, stop := Start(t.Errorf)
	t.Cleanup(stop)
	return s
}

// Start starts a server for a program outside go test (the benchmark):
// errorf is told of every scripted turn the model could not have given
// (the request is answered with a 500 api_error, as under New), and stop
// closes the server.
func Start(errorf func(format string, args ...any)) (s *Server, stop func()) {
	key := make([]byte, 32)
	rand.Read(key)
	s = &Server{errorf: errorf, signKey: key, scripts: map[string]*script{}, decodedImages: map[[32]byte]decoded{}, cache: map[string]map[[32]byte]int{}}
	srv := httptest.NewServer(s)
	s.URL = srv.URL
	return s, srv.Close
}

// Requests returns the bodies of the requests that the script of marker
// answered.
func (s *Server) Requests(marker string) []string {
	var out []string
	for _, r := range s.Received(marker) {
		out = append(out, r.Body)
	}
	return out
}

// Received returns the requests that the script of marker answered, with
// their headers, images and usage.
func (s *Server) Received(marker string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.all {
		if r.Script == marker {
			out = append(out, *r)
		}
	}
	return out
}

// All returns every accepted request to /v1/messages.
func (s *Server) All() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.all))
	for i, r := range s.all {
		out[i] = *r
	}
	return out
}

// Count returns how many requests to /v1/messages the server accepted.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

// Refusals returns the requests the server refused, as the real API would
// have.
func (s *Server) Refusals() []Refused {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refusals)
}

// Title sets the answer to title requests.
func (s *Server) Title(title string) { s.TitleTurn(Text(title)) }

// TitleTurn sets the answer to title requests as a turn (held, say).
func (s *Server) TitleTurn(turn Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.title = &turn
}

// Titles returns the bodies of the title requests.
func (s *Server) Titles() []string { return s.Requests(TitleScript) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seq++
	w.Header().Set("request-id", fmt.Sprintf("req_011CT%016d", s.seq))
	s.mu.Unlock()
	if err := s.authorize(r); err != nil {
		s.refuse(w, r, "", err)
		return
	}
	switch p := r.URL.Path; {
	case r.Method == http.MethodPost && p == "/v1/messages":
		s.messages(w, r)
	case r.Method == http.MethodGet && p == "/v1/models":
		s.listModels(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/models/"):
		s.getModel(w, r, strings.TrimPrefix(p, "/v1/models/"))
	default:
		s.refuse(w, r, "", &apiError{http.StatusNotFound, "not_found_error", "Not Found"})
	}
}

// apiKey is the request's API key: its x-api-key header, or the bearer
// token of its Authorization header, which is how SDK v2 sends it.
func apiKey(r *http.Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	k, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return k
}

func (s *Server) authorize(r *http.Request) error {
	key := apiKey(r)
	switch {
	case key == "":
		return &apiError{http.StatusUnauthorized, "authentication_error", "x-api-key header is required"}
	case s.Key != "" && key != s.Key:
		return &apiError{http.StatusUnauthorized, "authentication_error", "invalid x-api-key"}
	}
	switch v := r.Header.Get("anthropic-version"); {
	case slices.Contains(Versions, v):
		return nil
	case v == "":
		return invalid("anthropic-version: header is required")
	default:
		return invalid("anthropic-version: invalid version %q", v)
	}
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		s.refuse(w, r, string(raw), &apiError{http.StatusRequestEntityTooLarge, "request_too_large", "Request exceeds the maximum allowed number of bytes."})
		return
	}
	req, err := s.parse(raw, r.Header)
	if err != nil {
		s.refuse(w, r, string(raw), err)
		return
	}
	rec := &Request{Path: r.URL.RequestURI(), Version: req.version, Header: r.Header.Clone(), Body: req.body, Model: req.model, Stream: req.stream, Images: req.images}
	s.mu.Lock()
	var turn Turn
	rec.Script, turn = s.next(req)
	s.all = append(s.all, rec)
	s.mu.Unlock()
	if !wait(r, turn) {
		return
	}
	if turn.Status != 0 {
		writeTurnError(w, turn)
		return
	}
	ans, err := s.answer(req, turn)
	if err != nil {
		s.errorf("claudetest: script %q: %v", rec.Script, err)
		writeError(w, &apiError{http.StatusInternalServerError, "api_error", "claudetest script error: " + err.Error()})
		return
	}
	s.mu.Lock()
	ans.usage = s.account(req, apiKey(r), ans.outputTokens())
	rec.Usage = ans.usage
	s.mu.Unlock()
	if req.stream {
		s.stream(w, ans, turn)
		return
	}
	s.reply(w, ans, turn)
}

// wait delays and holds an answer as its turn says; false when the client
// went away meanwhile.
func wait(r *http.Request, turn Turn) bool {
	if turn.Delay > 0 {
		select {
		case <-time.After(turn.Delay):
		case <-r.Context().Done():
			return false
		}
	}
	if turn.Hold != nil {
		select {
		case <-turn.Hold:
		case <-r.Context().Done():
			return false
		}
	}
	return true
}

func (s *Server) models() []string {
	if len(s.Models) == 0 {
		return DefaultModels
	}
	return s.Models
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			s.refuse(w, r, "", invalid("limit: Input should be between 1 and 1000"))
			return
		}
		limit = n
	}
	ids := s.models()
	if a := q.Get("after_id"); a != "" {
		ids = ids[min(len(ids), slices.Index(ids, a)+1):]
	}
	if b := q.Get("before_id"); b != "" {
		if i := slices.Index(ids, b); i >= 0 {
			ids = ids[:i]
		}
	}
	more := len(ids) > limit
	ids = ids[:min(limit, len(ids))]
	data := make([]modelInfo, len(ids))
	for i, id := range ids {
		data[i] = s.modelInfo(id)
	}
	page := map[string]any{"data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(ids) > 0 {
		page["first_id"], page["last_id"] = ids[0], ids[len(ids)-1]
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request, id string) {
	if !slices.Contains(s.models(), id) {
		s.refuse(w, r, "", &apiError{http.StatusNotFound, "not_found_error", "model: " + id})
		return
	}
	writeJSON(w, http.StatusOK, s.modelInfo(id))
}

type modelInfo struct {
	Type           string `json:"type"`
	ID             string `json:"id"`
	DisplayName    string `json:"display_name"`
	CreatedAt      string `json:"created_at"`
	MaxInputTokens int    `json:"max_input_tokens"`
	MaxTokens      int    `json:"max_tokens"`
}

func (s *Server) modelInfo(id string) modelInfo {
	return modelInfo{Type: "model", ID: id, DisplayName: displayName(id), CreatedAt: "2025-09-29T00:00:00Z",
		MaxInputTokens: s.contextTokens(), MaxTokens: s.maxOutput()}
}

// displayName turns claude-sonnet-4-5 into Claude Sonnet 4.5.
func displayName(id string) string {
	var words []string
	for _, part := range strings.Split(id, "-") {
		if part == "" {
			continue
		}
		if n := len(words); n > 0 && unicode.IsDigit(rune(part[0])) && unicode.IsDigit(rune(words[n-1][len(words[n-1])-1])) {
			words[n-1] += "." + part
			continue
		}
		words = append(words, strings.ToUpper(part[:1])+part[1:])
	}
	return strings.Join(words, " ")
}

func (s *Server) zoomModels() []string {
	if s.ZoomModels == nil {
		return DefaultZoomModels
	}
	return s.ZoomModels
}

func (s *Server) contextTokens() int {
	if s.ContextTokens > 0 {
		return s.ContextTokens
	}
	return DefaultContextTokens
}

func (s *Server) maxOutput() int {
	if s.MaxOutputTokens > 0 {
		return s.MaxOutputTokens
	}
	return DefaultMaxOutputTokens
}

func (s *Server) cacheMin(model string) int {
	mins := s.CacheMinTokens
	if mins == nil {
		mins = map[string]int{"claude-opus-4-5": 4096}
	}
	if n, ok := mins[model]; ok {
		return n
	}
	return defaultCacheMinTokens
}

// apiError is an error answer in Anthropic's shape.
type apiError struct {
	status int
	typ    string
	msg    string
}

func (e *apiError) Error() string { return e.typ + ": " + e.msg }

// invalid is a 400 invalid_request_error.
func invalid(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(format, args...)}
}

// refuse answers a request the real API would refuse, and counts it.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, body string, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = invalid("%s", err.Error())
	}
	s.mu.Lock()
	s.refusals = append(s.refusals, Refused{Status: e.status, Type: e.typ, Message: e.msg, Path: r.URL.RequestURI(), Body: body})
	s.mu.Unlock()
	writeError(w, e)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, errorBody(e.typ, e.msg))
}

func errorBody(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
