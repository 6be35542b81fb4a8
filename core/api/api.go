// Package api serves the helper's REST API v1 (core/api/API.md): tasks and
// their activity (with a server-sent event stream that replays, then
// follows, and ends after the terminal status), files, interventions, the
// kill switch, schedules, providers, templates, VMs, settings, API keys,
// and the evaluation runs of `hivecrew eval run` with their reports.
//
// Requests over the unix socket are trusted (its file mode admits only this
// user). Over TCP every /api/v1 request needs a bearer API key or a web
// session (a login link's, or a paired device's: devices.go), the Host
// header must name this machine (unless remote access is enabled) and a
// cross-site Origin is refused. Only asking to pair, polling the pairing
// and checking whether one is signed in need no credentials. Errors are
// {"error": {"message", "code"}} with the status of their class; bad input is
// a 400 that names the field, never a 500.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/devvm"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/eval"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/pairing"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/presets"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/reveal"
	"github.com/hivecrew/hivecrew/core/scheduler"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/template"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/core/writeback"
)

// Defaults of Config.
const (
	sessionCookie = "hivecrew_session"
	loginLinkTTL  = 5 * time.Minute
	webSessionTTL = 7 * 24 * time.Hour
	// webSessionIdle ends a web session not used for this long.
	webSessionIdle = 2 * time.Hour
	// stepUpWindow is how long after its login link a web session may
	// change what only the owner should: API keys, providers' keys and
	// addresses, safety settings.
	stepUpWindow = 10 * time.Minute
)

// Pool is what the API needs of the VM pool; *pool.Pool has it.
type Pool interface {
	Snapshot() []pool.Info
	Remove(ctx context.Context, id, reason string) error
}

// Secrets stores providers' API keys.
type Secrets interface {
	Get(ref string) (string, error)
	Set(ref, value string) error
	Delete(ref string) error
}

// Config configures the API. Every field but MaxUploadBytes and Started is
// required.
type Config struct {
	Store        *store.Store
	Orchestrator *orchestrator.Orchestrator
	// Presets saves and launches presets; Scheduler fires schedules.
	Presets   *presets.Presets
	Scheduler *scheduler.Scheduler
	// Writeback answers reviews of tasks' changes to host folders.
	Writeback *writeback.Reviews
	Pool      Pool
	Secrets   Secrets
	Paths     config.Paths
	// Settings returns the current settings; SaveSettings applies a JSON
	// patch and returns the result.
	Settings     func() config.Settings
	SaveSettings func(ctx context.Context, patch []byte) (config.Settings, error)
	// APIKey returns a provider's key (environment override first).
	APIKey  func(p store.Provider) (string, error)
	Version string
	Backend string
	// BaseURL is the TCP listener's URL (http://127.0.0.1:5482), for links.
	BaseURL string
	Started time.Time
	// MaxUploadBytes, if set, caps a request body with files in place of
	// Settings' maxUploadMB (tests use caps below a megabyte).
	MaxUploadBytes int64
	// Launch opens a file or folder on this computer (Show in folder);
	// default the desktop's opener (reveal.Desktop).
	Launch reveal.Launch
	// LLMBackoff is the first retry wait of provider tests; default 1 s.
	LLMBackoff time.Duration
	// Web, if set, serves the web UI: every GET outside /api/ and /login.
	Web http.Handler
	// Templates builds, seals, edits and deletes templates; nil leaves
	// the template routes read-only.
	Templates *template.Manager
	// DevVMs runs developer VMs; nil refuses them (unsupported).
	DevVMs *devvm.Manager
	// Provisioning keeps what VMs are given as they start; nil answers
	// GET /provisioning with empty lists and refuses PUT.
	Provisioning *provision.Store
	// StepUpWindow is how long after its login link a web session may
	// change API keys, providers and safety settings (default 10 minutes).
	StepUpWindow time.Duration
	// Webhooks, if set, sends test notices (POST /webhooks/:id/test).
	Webhooks WebhookTester
	// PairingTTL is how long a device's pairing code waits for the
	// user (default 5 minutes).
	PairingTTL time.Duration
	Log        *slog.Logger
}

// WebhookTester sends a webhook a test notice; *webhooks.Sender is one.
type WebhookTester interface {
	Test(ctx context.Context, id string) (int, error)
}

// API is the REST API.
type API struct {
	cfg   Config
	o     *orchestrator.Orchestrator
	ps    *presets.Presets
	sched *scheduler.Scheduler
	wb    *writeback.Reviews
	st    *store.Store
	evals *eval.Runs

	// pairings are the devices waiting for the user's answer.
	pairings *pairing.Book

	// mu guards logins and sessions (one-time login tokens and web
	// sessions, by token).
	mu       sync.Mutex
	logins   map[string]time.Time
	sessions map[string]*webSession
}

// New returns the API.
func New(cfg Config) (*API, error) {
	if cfg.Store == nil || cfg.Orchestrator == nil || cfg.Presets == nil || cfg.Scheduler == nil || cfg.Writeback == nil || cfg.Pool == nil || cfg.Secrets == nil || cfg.Settings == nil ||
		cfg.SaveSettings == nil || cfg.APIKey == nil || cfg.Log == nil || cfg.Paths.Home == "" {
		return nil, errors.New("api: Store, Orchestrator, Presets, Scheduler, Writeback, Pool, Secrets, Paths, Settings, SaveSettings, APIKey and Log are required")
	}
	if cfg.Started.IsZero() {
		cfg.Started = time.Now()
	}
	if cfg.Launch == nil {
		cfg.Launch = reveal.Desktop(runtime.GOOS)
	}
	if cfg.LLMBackoff == 0 {
		cfg.LLMBackoff = time.Second
	}
	if cfg.StepUpWindow == 0 {
		cfg.StepUpWindow = stepUpWindow
	}
	return &API{cfg: cfg, o: cfg.Orchestrator, ps: cfg.Presets, sched: cfg.Scheduler, wb: cfg.Writeback, st: cfg.Store, evals: eval.NewRuns(cfg.Paths.Evals()), pairings: pairing.New(pairing.Config{TTL: cfg.PairingTTL}),
		logins: map[string]time.Time{}, sessions: map[string]*webSession{}}, nil
}

// handlerFunc is a handler that returns its error; errors are written in
// the API's shape by their class.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handler returns the routes of /api/v1 and /login for one listener; unix
// says the request came over the unix socket.
func (a *API) Handler(unix bool) http.Handler {
	mux := http.NewServeMux()
	var routes http.Handler
	a.routes(mux.Handle, unix, func() http.Handler { return routes })
	routes = jsonMisses(mux)
	h := routes
	if !unix {
		h = a.guard(h)
	}
	return h
}

// Routes lists the patterns ("METHOD /path") of a listener's routes: for
// tests that must cover every route, including ones added later.
func Routes(unix bool) []string {
	var out []string
	(&API{}).routes(func(pattern string, _ http.Handler) { out = append(out, pattern) }, unix, func() http.Handler { return nil })
	return out
}

// routes registers the routes of a listener; self returns them (for the
// MCP endpoint's tools, which call them with their caller's credentials).
func (a *API) routes(handle func(string, http.Handler), unix bool, self func() http.Handler) {
	h := func(pattern string, f handlerFunc) {
		handle(pattern, a.wrap(f))
	}
	// Tasks.
	h("POST /api/v1/tasks", a.createTask)
	h("POST /api/v1/tasks/batch", a.createTaskBatch)
	h("GET /api/v1/tasks", a.listTasks)
	h("GET /api/v1/tasks/{id}", a.getTask)
	h("PATCH /api/v1/tasks/{id}", a.patchTask)
	h("DELETE /api/v1/tasks/{id}", a.deleteTask)
	h("GET /api/v1/tasks/{id}/files", a.taskFiles)
	h("GET /api/v1/tasks/{id}/files/{name...}", a.taskFile)
	h("POST /api/v1/tasks/{id}/outputs/{name}/open", a.openOutput)
	h("GET /api/v1/tasks/{id}/screenshot", a.screenshot)
	h("GET /api/v1/tasks/{id}/screenshots/{seq}", a.eventScreenshot)
	h("GET /api/v1/tasks/{id}/activity", a.activity)
	h("GET /api/v1/tasks/{id}/events", a.events)
	h("GET /api/v1/tasks/{id}/question", a.question)
	h("POST /api/v1/tasks/{id}/question/answer", a.answer)
	h("GET /api/v1/tasks/{id}/permission", a.permission)
	h("POST /api/v1/tasks/{id}/permission/respond", a.respond)
	h("POST /api/v1/tasks/{id}/instructions", a.instructions)
	h("POST /api/v1/tasks/{id}/takeover", a.takeover)
	h("POST /api/v1/tasks/{id}/input", a.input)
	h("GET /api/v1/tasks/{id}/stream", a.stream)
	h("GET /api/v1/tasks/{id}/export", a.export)
	h("GET /api/v1/tasks/{id}/writeback", a.writeback)
	h("GET /api/v1/tasks/{id}/check", a.checkResult)
	h("GET /api/v1/tasks/{id}/writeback/{item}/file", a.writebackFile)
	// Schedules.
	h("POST /api/v1/schedules", a.createSchedule)
	h("GET /api/v1/schedules", a.listSchedules)
	h("GET /api/v1/schedules/{id}", a.getSchedule)
	h("PATCH /api/v1/schedules/{id}", a.patchSchedule)
	h("PUT /api/v1/schedules/{id}", a.replaceSchedule)
	h("DELETE /api/v1/schedules/{id}", a.deleteSchedule)
	h("POST /api/v1/schedules/{id}/run", a.runSchedule)
	h("GET /api/v1/usage", a.usage)
	h("GET /api/v1/presets", a.listPresets)
	h("POST /api/v1/presets", a.createPreset)
	h("GET /api/v1/presets/{id}", a.getPreset)
	h("PATCH /api/v1/presets/{id}", a.patchPreset)
	h("DELETE /api/v1/presets/{id}", a.deletePreset)
	h("POST /api/v1/presets/{id}/run", a.runPreset)
	// Providers.
	h("GET /api/v1/providers", a.listProviders)
	h("POST /api/v1/providers", a.createProvider)
	h("GET /api/v1/providers/{id}", a.getProvider)
	h("PATCH /api/v1/providers/{id}", a.patchProvider)
	h("DELETE /api/v1/providers/{id}", a.deleteProvider)
	h("GET /api/v1/providers/{id}/models", a.providerModels)
	h("POST /api/v1/providers/{id}/test", a.testProvider)
	// Credentials (extension).
	h("GET /api/v1/credentials", a.listCredentials)
	h("POST /api/v1/credentials", a.createCredential)
	h("POST /api/v1/credentials/import", a.importCredentials)
	h("PATCH /api/v1/credentials/{id}", a.updateCredential)
	h("DELETE /api/v1/credentials/{id}", a.deleteCredential)
	h("GET /api/v1/mcp-servers", a.listMCPServers)
	h("POST /api/v1/mcp-servers", a.createMCPServer)
	h("PATCH /api/v1/mcp-servers/{id}", a.updateMCPServer)
	h("DELETE /api/v1/mcp-servers/{id}", a.deleteMCPServer)
	h("POST /api/v1/mcp-servers/{id}/check", a.checkMCPServer)
	h("GET /api/v1/webhooks", a.listWebhooks)
	h("POST /api/v1/webhooks", a.createWebhook)
	h("PATCH /api/v1/webhooks/{id}", a.switchWebhook)
	h("DELETE /api/v1/webhooks/{id}", a.deleteWebhook)
	h("POST /api/v1/webhooks/{id}/test", a.testWebhook)
	// Templates, VMs, system.
	a.templateRoutes(h)
	a.templateShareRoutes(h)
	h("GET /api/v1/vms", a.listVMs)
	h("POST /api/v1/vms/{id}/start", a.startVM)
	h("POST /api/v1/vms/{id}/stop", a.stopVM)
	h("DELETE /api/v1/vms/{id}", a.stopVM)
	a.devVMRoutes(h)
	h("GET /api/v1/skills", a.listSkills)
	h("POST /api/v1/skills", a.saveSkill)
	h("POST /api/v1/skills/import", a.importSkills)
	h("GET /api/v1/skills/{name}", a.getSkill)
	h("PUT /api/v1/skills/{name}", a.saveSkill)
	h("PATCH /api/v1/skills/{name}", a.patchSkill)
	h("DELETE /api/v1/skills/{name}", a.deleteSkill)
	h("GET /api/v1/tasks/{id}/skill-draft", a.skillDraft)
	// Evaluation runs (extension).
	h("GET /api/v1/evals", a.listEvals)
	h("GET /api/v1/evals/{id}", a.getEval)
	h("GET /api/v1/evals/{id}/report", a.evalReport)
	h("DELETE /api/v1/evals/{id}", a.deleteEval)
	h("GET /api/v1/web-search", a.webSearch)
	h("PUT /api/v1/web-search", a.setWebSearchKey)
	h("GET /api/v1/provisioning", a.provisioning)
	h("PUT /api/v1/provisioning", a.setProvisioning)
	h("GET /api/v1/system/status", a.status)
	h("GET /api/v1/system/config", a.systemConfig)
	h("POST /api/v1/system/stop-all", a.stopAll)
	h("GET /api/v1/settings", a.getSettings)
	h("PATCH /api/v1/settings", a.patchSettings)
	h("GET /api/v1/apikeys", a.listAPIKeys)
	h("POST /api/v1/apikeys", a.createAPIKey)
	h("DELETE /api/v1/apikeys/{id}", a.revokeAPIKey)
	if unix {
		// A login link is minted only for the local user (CLI, app).
		h("POST /api/v1/auth/login-link", a.loginLink)
		h("GET /api/v1/auth/check", a.authCheckLocal)
	} else {
		h("GET /api/v1/auth/check", a.authCheck)
		// Hivecrew as an MCP server for other agents (the CLI's is
		// `hivecrew mcp serve`, over stdio). It is stateless: GET and
		// DELETE get the SDK's 405, which MCP clients expect.
		ep := a.mcpEndpoint(self)
		for _, method := range []string{"POST ", "GET ", "DELETE "} {
			handle(method+mcpPath, ep)
		}
	}
	// Device pairing (devices.go).
	h("POST /api/v1/auth/pair/request", a.pairRequest)
	h("GET /api/v1/auth/pair/status", a.pairStatus)
	h("POST /api/v1/auth/logout", a.logout)
	h("GET /api/v1/auth/devices", a.listDevices)
	h("DELETE /api/v1/auth/devices/{id}", a.revokeDevice)
	h("GET /api/v1/auth/pairings", a.listPairings)
	h("POST /api/v1/auth/pairings/{code}/approve", a.approvePairing)
	h("POST /api/v1/auth/pairings/{code}/deny", a.denyPairing)
	handle("GET /login", a.wrap(a.login))
	if a.cfg.Web != nil {
		handle("GET /", notUnderAPI(a.cfg.Web))
	}
}

// jsonMisses answers requests no route takes (404, or 405 with Allow) in
// the API's error shape instead of the mux's plain text.
func jsonMisses(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		probe := &statusProbe{header: http.Header{}}
		mux.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed && onlyWeb(mux, r) {
			// Only the web UI's catch-all takes this path (for GET): for any
			// other method it does not exist.
			probe.status = http.StatusNotFound
			probe.header.Del("Allow")
		}
		if allow := probe.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		if probe.status == http.StatusMethodNotAllowed {
			WriteError(w, probe.status, "method_not_allowed", fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, probe.header.Get("Allow")))
			return
		}
		WriteError(w, http.StatusNotFound, "not_found", "no route for "+r.Method+" "+r.URL.Path)
	})
}

// notUnderAPI serves the web UI, but never for /api/ paths (an unknown
// API route is a JSON 404, not a page).
func notUnderAPI(web http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/") {
			WriteError(w, http.StatusNotFound, "not_found", "no route for "+r.Method+" "+r.URL.Path)
			return
		}
		web.ServeHTTP(w, r)
	})
}

// onlyWeb reports whether a GET to r's path would be taken by the web
// UI's catch-all alone.
func onlyWeb(mux *http.ServeMux, r *http.Request) bool {
	get := r.Clone(r.Context())
	get.Method = http.MethodGet
	_, pattern := mux.Handler(get)
	return pattern == "GET /"
}

// statusProbe records what the mux would answer, and discards the body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(s int)           { p.status = s }

// wrap turns a handlerFunc into a handler that writes its error.
func (a *API) wrap(f handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			a.writeErr(w, r, err)
		}
	})
}

// status and code of an error, by class.
func classify(err error) (int, string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, errdefs.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "payload_too_large"
	case errors.Is(err, errdefs.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, errdefs.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, errdefs.ErrInvalid):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, errUnauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, errStepUp):
		return http.StatusForbidden, "step_up_required"
	case errors.Is(err, errForbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, errTooMany):
		return http.StatusTooManyRequests, "too_many_requests"
	case errors.Is(err, errdefs.ErrUnsupported):
		return http.StatusNotImplemented, "unsupported"
	case errors.Is(err, errBadGateway):
		return http.StatusBadGateway, "bad_gateway"
	case errors.Is(err, errdefs.ErrUnavailable):
		return http.StatusServiceUnavailable, "unavailable"
	}
	return http.StatusInternalServerError, "internal_error"
}

// errBadGateway is the class of an upstream (LLM provider) that failed
// (502 bad_gateway).
var errBadGateway = errors.New("bad gateway")

// errUnauthorized is the class of a refused login link (401).
var errUnauthorized = errors.New("unauthorized")

// errTooMany is the class of a request past a rate or count limit (429
// too_many_requests, with Retry-After).
var errTooMany = errors.New("too many requests")

// errForbidden is the class of a request refused for where it comes
// from (403 forbidden).
var errForbidden = errors.New("forbidden")

// errStepUp is the class of a change a web session may make only soon
// after its login link (403 step_up_required).
var errStepUp = errors.New("step-up required")

func (a *API) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	status, code := classify(err)
	switch {
	case r.Context().Err() != nil:
		// The client went away (a closed tab, a stopped stream): nothing
		// failed here, and nobody reads the answer.
		a.cfg.Log.Debug("client left before the answer", "method", r.Method, "path", r.URL.Path, "err", err)
		return
	case status >= 500:
		a.cfg.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	var mbe *http.MaxBytesError
	msg := err.Error()
	if errors.As(err, &mbe) {
		msg = fmt.Sprintf("request body is over the limit of %d bytes", mbe.Limit)
	}
	WriteError(w, status, code, msg)
}

// WriteError writes the API's error shape.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(wire.Error{Error: wire.ErrorBody{Message: message, Code: code}})
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// maxJSONBytes caps a JSON request body.
const maxJSONBytes = 1 << 20

// decode reads a JSON body into v as the Swift server does: whatever the
// Content-Type says (curl -d sends a form type), with fields v does not
// know ignored, so clients that send more (Swift's, newer ones) work. It
// stays exact where leniency would lose data: a known field with the
// wrong type is a 400, and so is an unknown field that looks like a
// misspelt known one (see checkFields). Ignored fields are named in the
// X-Hivecrew-Ignored-Fields header.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errdefs.Invalidf("read the body: %v", err)
	}
	return decodeJSON(w, body, v)
}

// decodeJSON is decode for a body already read (a multipart part).
func decodeJSON(w http.ResponseWriter, body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errdefs.Invalidf("a JSON body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return errdefs.Invalidf("bad JSON body: %v", jsonProblem(err))
	}
	if dec.More() {
		return errdefs.Invalidf("bad JSON body: more than one value")
	}
	ignored, err := checkFields(body, reflect.TypeOf(v))
	if err != nil {
		return err
	}
	if len(ignored) > 0 && w != nil {
		w.Header().Set("X-Hivecrew-Ignored-Fields", strings.Join(ignored, ", "))
	}
	return nil
}

// jsonProblem rewords decoder errors without Go type names.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q has the wrong type (%s)", te.Field, te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// ts is a time as the API sends it: UTC in whole seconds, which is what
// Foundation's .iso8601 date decoding (the Swift clients') accepts.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// tsp is ts of an optional time.
func tsp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ts(*t)
	return &v
}

// clampParam reads an integer query parameter as the Swift server does:
// absent or not a number is def, and the value is clamped to [lo, hi].
func clampParam(r *http.Request, name string, def, lo, hi int) int {
	n, err := strconv.Atoi(r.URL.Query().Get(name))
	if err != nil {
		return def
	}
	return min(max(n, lo), hi)
}

// intParam reads an integer query parameter within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, errdefs.Invalidf("%s %q: want an integer from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
