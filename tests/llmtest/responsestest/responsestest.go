// Package responsestest is the end-to-end tests' fake of OpenAI's
// Responses API: an HTTP server in the test that speaks the protocol as
// OpenAI documents it (POST /v1/responses, JSON or server-sent events,
// and GET /v1/models), plays scripts of answers (text, reasoning, function
// and computer calls with pending safety checks, refusals, verdicts, HTTP
// errors, failed, incomplete and broken responses, held answers), and
// records every request it was sent. New ties it to a test; Start runs it
// in a program (the benchmark), with its own errorf for the scripts'
// mistakes.
//
// It refuses, with OpenAI's status, error shape and wording, what the
// real API refuses, so that a client that passes here does not fail
// against OpenAI: unknown parameters and wrong types; an unknown model
// (404 model_not_found); computer-use-preview without exactly one
// computer_use_preview tool or without truncation "auto", and the
// computer tool on another model; malformed or duplicate function tools
// and strict schemas that are not strict; reasoning items sent back
// without the encrypted_content the server issued (when store is false),
// with content it did not issue (it is signed with an HMAC), or without
// the item that followed them in the server's output; calls sent back
// without their reasoning item; calls without an output later in the
// input and outputs without a call; computer calls whose output does not
// acknowledge exactly the pending safety checks the server issued;
// screenshots and images that are not images; and a conversation larger
// than the model's context (or, with truncation "auto", it drops items
// from the middle as OpenAI does). A refused request never reaches the
// script. What the real API takes but this server cannot simulate (file
// ids, image URLs to download, other tool types, background responses) is
// refused with a message that says so.
//
// State is honest: a response of a request with store true (the API's
// default) is kept, so previous_response_id, item_reference and reasoning
// items without encrypted_content work against it; with store false
// nothing is kept and each of them is refused as OpenAI refuses it.
//
// A script is chosen by a marker string found in the request (put it in
// the task's description) or by Match; a request that matches no script
// gets a text answer, or a successful verdict when it asks for a
// json_schema format. A scripted turn the real model could not have given
// to the request (a call of a tool the request does not offer, more calls
// than it allows, an answer that does not fit its strict schema) fails
// the test.
package responsestest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// Server is the scripted Responses API.
type Server struct {
	// URL is the base URL to configure (ends in /v1).
	URL string
	// Key, if set, is the only API key accepted; others get 401.
	Key string
	// Models are the model ids served; the default is
	// "computer-use-preview" and "gpt-5".
	Models []string
	// ContextTokens, if set, is every model's context window; the default
	// is 128000 tokens for computer-use-preview and 400000 for gpt-5.
	ContextTokens int
	// Match, if set, picks the script of a request by name (the marker
	// given to Script) instead of by the markers it contains; "" or an
	// unknown name gets the default answers. Set it before the first
	// request.
	Match func(body string) string

	// Book holds the scripts: Script, TitleTurn, Titles, Requests (the
	// bodies of the accepted requests that matched a marker).
	llmtest.Book[Turn]

	// errorf is told of a script's turn the model could not have given.
	errorf func(format string, args ...any)
	secret []byte // signs encrypted_content
	images imageCache

	// mu guards everything below.
	mu        sync.Mutex
	log       []*Request
	refusals  int
	issued    map[string]*issued // output items by id
	calls     map[string]*issued // calls by call_id
	responses map[string]*storedResponse
	acks      []Acknowledgement
	acked     map[string]bool // call ids whose acknowledgement is recorded
	prompts   map[string][][]segment
}

// Request is one request the server was sent, as it answered it.
type Request struct {
	Body   string
	Header http.Header
	Model  string
	Stream bool
	Store  bool
	// Status is the HTTP status answered; Error and Code are the refusal's
	// (or scripted error's) message and code.
	Status      int
	Error, Code string
	// Images are the request's images in order (screenshots included).
	Images []Image
	// Usage is what the answer reported.
	Usage Usage
	// Truncated is how many items truncation "auto" dropped.
	Truncated int
	// ResponseID is the answer's id; Title marks a title request.
	ResponseID string
	Title      bool
}

// Usage is an answer's token usage.
type Usage struct {
	InputTokens, CachedTokens, OutputTokens, ReasoningTokens, TotalTokens int
}

// Acknowledgement is the first request that acknowledged a computer call's
// pending safety checks.
type Acknowledgement struct {
	CallID string
	Checks []SafetyCheck
	// Issued is the index (in Received) of the request whose answer had
	// the call; Request is the index of the one that acknowledged it.
	Issued, Request int
	At              time.Time
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
// (the turn is still played, as under New), and stop closes the server.
func Start(errorf func(format string, args ...any)) (s *Server, stop func()) {
	s = &Server{errorf: errorf, secret: []byte(randomHex(32)), images: imageCache{byHash: map[[32]byte]Image{}},
		issued: map[string]*issued{}, calls: map[string]*issued{},
		responses: map[string]*storedResponse{}, acked: map[string]bool{}, prompts: map[string][][]segment{}}
	srv := httptest.NewServer(s)
	s.URL = srv.URL + "/v1"
	return s, srv.Close
}

// Title sets the answer to title requests (those carrying llm.TitlePrompt).
func (s *Server) Title(title string) { s.TitleTurn(Text(title)) }

// Received returns every request sent to POST /v1/responses, refused ones
// included, in order.
func (s *Server) Received() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.log))
	for i, r := range s.log {
		out[i] = *r
	}
	return out
}

// Count returns how many requests the server accepted.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log) - s.refusals
}

// Refusals returns how many requests the server refused.
func (s *Server) Refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusals
}

// Acknowledgements returns the acknowledged safety checks, in the order
// they were first acknowledged.
func (s *Server) Acknowledgements() []Acknowledgement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acks)
}

func (s *Server) models() []string {
	if len(s.Models) > 0 {
		return s.Models
	}
	return []string{"computer-use-preview", "gpt-5"}
}

func (s *Server) contextTokens(model string) int {
	switch {
	case s.ContextTokens > 0:
		return s.ContextTokens
	case strings.HasPrefix(model, "gpt-5"):
		return 400000
	}
	return 128000
}

// maxBody bounds a request body.
const maxBody = 64 << 20

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		s.respond(w, r)
	case r.Method == http.MethodGet && (r.URL.Path == "/v1/models" || strings.HasPrefix(r.URL.Path, "/v1/models/")):
		if e := s.authorize(r); e != nil {
			writeError(w, e, 0)
			return
		}
		s.listModels(w, strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1/models"), "/"))
	default:
		writeError(w, notFound("", "", "Invalid URL (%s %s)", r.Method, r.URL.Path), 0)
	}
}

func (s *Server) listModels(w http.ResponseWriter, id string) {
	model := func(id string) map[string]any {
		return map[string]any{"id": id, "object": "model", "created": 1741651200, "owned_by": "system"}
	}
	w.Header().Set("Content-Type", "application/json")
	if id == "" {
		var data []any
		for _, m := range s.models() {
			data = append(data, model(m))
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
		return
	}
	if !slices.Contains(s.models(), id) {
		writeError(w, notFound("model", "model_not_found", "The model '%s' does not exist", id), 0)
		return
	}
	json.NewEncoder(w).Encode(model(id))
}

// authorize checks the bearer key as OpenAI does.
func (s *Server) authorize(r *http.Request) *apiError {
	if s.Key == "" {
		return nil
	}
	h := r.Header.Get("Authorization")
	key, ok := strings.CutPrefix(h, "Bearer ")
	switch {
	case !ok || key == "":
		return &apiError{status: http.StatusUnauthorized, Type: "invalid_request_error",
			Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (i.e. user:pass) when using HTTP basic auth."}
	case key != s.Key:
		shown := "****"
		if len(key) > 8 {
			shown = key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
		}
		return &apiError{status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
			Message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", shown)}
	}
	return nil
}

// respond answers POST /v1/responses: checks, then the script's turn.
func (s *Server) respond(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	rec := &Request{Body: string(body), Header: r.Header.Clone()}
	var e *apiError
	switch {
	case err != nil:
		e = invalid("", "", "The request body could not be read: %s", err.Error())
	case len(body) > maxBody:
		e = &apiError{status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Message: "Request too large."}
	default:
		e = s.authorize(r)
	}
	var req *request
	if e == nil {
		req, e = s.parse(body)
	}
	if req != nil {
		rec.Model, rec.Stream, rec.Store, rec.Images = req.Model, req.Stream, req.Store, req.images
	}
	s.mu.Lock()
	a, e := s.accept(req, rec, e)
	s.mu.Unlock()
	if e != nil {
		writeError(w, e, 0)
		return
	}
	for _, p := range a.problems {
		s.errorf("responsestest: %s", p)
	}
	a.serve(w, r)
}

// accept records the request and, unless refused (e, or a check of the
// conversation), picks its turn and issues its output. s.mu is held.
func (s *Server) accept(req *request, rec *Request, e *apiError) (*answer, *apiError) {
	index := len(s.log)
	s.log = append(s.log, rec)
	var ctx []*item
	if e == nil {
		ctx, e = s.conversation(req)
	}
	if e == nil {
		ctx, rec.Truncated, e = s.fit(req, ctx)
	}
	if e != nil {
		s.refusals++
		rec.Status, rec.Error = e.status, e.Message
		rec.Code, _ = e.Code.(string)
		return nil, e
	}
	turn, problems := s.pick(req, rec)
	a := &answer{id: "resp_" + randomHex(24), created: time.Now().Unix(), req: req, turn: turn, problems: problems}
	rec.ResponseID, rec.Status = a.id, http.StatusOK
	switch {
	case turn.Status != 0:
		rec.Status, rec.Error = turn.Status, statusError(turn.Status).Message
		return a, nil
	case turn.fail != nil:
		rec.Error, rec.Code = turn.fail.message, turn.fail.code
		if turn.fail.event && !req.Stream {
			rec.Status = http.StatusInternalServerError
		}
	}
	segs := prompt(req, ctx)
	in := promptTokens(segs)
	hit := min(cached(segs, s.prompts[req.Model]), in)
	s.prompts[req.Model] = append(s.prompts[req.Model], segs)
	if n := len(s.prompts[req.Model]); n > cacheKept {
		s.prompts[req.Model] = s.prompts[req.Model][n-cacheKept:]
	}
	a.output = s.issue(turn, req, index)
	out, reasoning := outputTokens(turn.items)
	rec.Usage = Usage{InputTokens: in, CachedTokens: hit, OutputTokens: out, ReasoningTokens: reasoning, TotalTokens: in + out}
	a.usage = rec.Usage
	if req.Store && turn.fail == nil && !turn.broken {
		sr := &storedResponse{context: ctx}
		for _, m := range a.output {
			sr.output = append(sr.output, s.issued[m["id"].(string)].item)
		}
		s.responses[a.id] = sr
	}
	s.recordAcks(req, index)
	return a, nil
}

// fit applies the context window: a conversation too large is refused,
// or with truncation "auto" loses items from the middle until it fits.
func (s *Server) fit(req *request, ctx []*item) ([]*item, int, *apiError) {
	limit := s.contextTokens(req.Model)
	total := (len(req.toolsRaw) + len(req.Instructions) + 3) / 4
	for _, it := range ctx {
		total += it.tokens
	}
	dropped := 0
	for req.Truncation == "auto" && total > limit && len(ctx) > 1 {
		total -= ctx[1].tokens
		ctx = slices.Delete(slices.Clone(ctx), 1, 2)
		dropped++
	}
	if total > limit {
		return nil, 0, invalid("input", "context_length_exceeded", "Your input exceeds the context window of this model. Please adjust your input and try again.")
	}
	return ctx, dropped, nil
}

// recordAcks records the request's first acknowledgement of each computer
// call's safety checks. s.mu is held.
func (s *Server) recordAcks(req *request, index int) {
	for _, it := range req.Input {
		if it.Type != "computer_call_output" || len(it.AcknowledgedSafetyChecks) == 0 || s.acked[it.CallID] {
			continue
		}
		s.acked[it.CallID] = true
		a := Acknowledgement{CallID: it.CallID, Checks: slices.Clone(it.AcknowledgedSafetyChecks), Issued: -1, Request: index, At: time.Now()}
		if is := s.calls[it.CallID]; is != nil {
			a.Issued = is.request
		}
		s.acks = append(s.acks, a)
	}
}

// pick chooses the request's turn and says what in it the real model
// could not have answered.
func (s *Server) pick(req *request, rec *Request) (Turn, []string) {
	rec.Title = llmtest.IsTitleRequest([]byte(rec.Body))
	turn, marker := s.Next(rec.Body, s.Match, func(t Turn) bool { return t.Repeat }, func(title bool) Turn {
		if title {
			return Text("")
		}
		return defaultTurn(req)
	})
	var problems []string
	for _, p := range impossible(turn, req) {
		problems = append(problems, fmt.Sprintf("script %q answers a request with what the model could not: %s", marker, p))
	}
	return turn, problems
}

// defaultTurn finishes any task: a text answer, or a successful verdict
// for a json_schema request.
func defaultTurn(req *request) Turn {
	if req.Format.Type == "json_schema" {
		return Verdict(true, "Done.")
	}
	return Text("Finished.")
}
