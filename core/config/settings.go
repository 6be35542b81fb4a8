package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/shortcut"
)

// NetworkMode says what network a guest gets.
type NetworkMode string

// Network modes.
const (
	// NetworkInternet gives the guest outbound NAT (never the host's loopback).
	NetworkInternet NetworkMode = "internet"
	// NetworkOffline gives the guest no interface but loopback.
	NetworkOffline NetworkMode = "offline"
)

// Valid reports whether m is a known mode.
func (m NetworkMode) Valid() bool { return m == NetworkInternet || m == NetworkOffline }

// Permission is the policy for one agent tool.
type Permission string

// Tool permissions.
const (
	Allow Permission = "allow"
	Ask   Permission = "ask"
	Deny  Permission = "deny"
)

// Valid reports whether p is a known permission.
func (p Permission) Valid() bool { return p == Allow || p == Ask || p == Deny }

// AgentTools are the tools the model can call (guestagent/protocol/PROTOCOL.md,
// "Agent tools"), the names a tool policy may mention. core/agent offers
// exactly these (a test keeps the two lists in step).
var AgentTools = []string{
	"screenshot", "mouse_click", "mouse_move", "mouse_drag", "scroll",
	"keyboard_type", "keyboard_key", "open_app", "open_file", "open_url",
	"run_shell", "read_file", "write_file", "list_directory", "move_file",
	"traverse_accessibility_tree", "get_frontmost_app", "list_running_apps",
	"clipboard_read", "clipboard_write", "wait",
	"ask_text_question", "ask_multiple_choice", "request_user_intervention",
	"use_credential",
}

// HostToolNames are the host's own tools (core/agent hosttools.go), offered
// when the task can use them: web search and reading (with the internet
// only), skills (with a library), subagents. A policy may name them, and
// any MCP server's tool as mcp__SERVER__TOOL.
var HostToolNames = []string{WebSearch, ReadWebpage, UseSkill, SpawnSubagent}

// Host tools.
const (
	WebSearch     = "web_search"
	ReadWebpage   = "read_webpage"
	UseSkill      = "use_skill"
	SpawnSubagent = "spawn_subagent"
)

// MCPToolPrefix begins the name of an MCP server's tool: mcp__SERVER__TOOL.
const MCPToolPrefix = "mcp__"

// mcpToolName is a policy name for an MCP server's tool (or, with a
// trailing "*", all of a server's tools: mcp__files__*).
var mcpToolName = regexp.MustCompile(`^mcp__[A-Za-z0-9-]+__([A-Za-z0-9_-]+|\*)$`)

// OpenTerminal is the pseudo-tool a policy uses for starting what runs
// code: open_app or open_file of a terminal emulator, a shell, an
// interpreter, a launcher or an app that runs what is typed into it, and
// open_file of a program or script with its default application, judged
// by what the guest says the call would start (core/agent terminal.go). A
// GUI agent can type into any program it can open, so run_shell's policy
// alone would gate the tool, not the capability; a policy that does not
// name open_terminal gives it run_shell's permission.
const OpenTerminal = "open_terminal"

// legacyPolicyNames were accepted by earlier versions but gate nothing:
// file tools never reach outside the shared folder. Stored policies that
// name them still load; the names are dropped (see ToolPolicy.normalize).
var legacyPolicyNames = []string{"write_outside_shared"}

// ToolPolicy maps a tool name to its permission; tools it does not name are
// allowed (open_terminal follows run_shell).
type ToolPolicy map[string]Permission

// For returns the permission for a tool.
func (p ToolPolicy) For(tool string) Permission {
	if perm, ok := p.Lookup(tool); ok {
		return perm
	}
	if tool == OpenTerminal {
		return p.For("run_shell")
	}
	if tool == UseCredential {
		return Ask // typing a stored secret asks unless a policy says otherwise
	}
	return Allow
}

// Lookup returns what p says of a tool, if it names it: by its name, or an
// MCP server's tool by its server's wildcard (mcp__SERVER__*).
func (p ToolPolicy) Lookup(tool string) (Permission, bool) {
	if perm, ok := p[tool]; ok {
		return perm, true
	}
	if rest, ok := strings.CutPrefix(tool, MCPToolPrefix); ok {
		if server, _, ok := strings.Cut(rest, "__"); ok {
			perm, ok := p[MCPToolPrefix+server+"__*"]
			return perm, ok
		}
	}
	return "", false
}

// UseCredential is the tool that types a stored credential's secret into
// the guest; a policy that does not name it asks (once per credential and
// task).
const UseCredential = "use_credential"

// Merge returns p with overrides applied on top (a task's policy over the
// default); neither input is modified.
func (p ToolPolicy) Merge(overrides ToolPolicy) ToolPolicy {
	out := maps.Clone(p)
	if out == nil {
		out = ToolPolicy{}
	}
	maps.Copy(out, overrides)
	return out
}

// PolicyNames are the names a tool policy may mention: the agent's tools
// and the open_terminal pseudo-tool.
func PolicyNames() []string {
	return append(append(slices.Clone(AgentTools), HostToolNames...), OpenTerminal)
}

// Validate reports unknown tool names and permissions.
func (p ToolPolicy) Validate() error {
	var errs []error
	known := PolicyNames()
	for _, tool := range slices.Sorted(maps.Keys(p)) {
		if !slices.Contains(known, tool) && !slices.Contains(legacyPolicyNames, tool) && !mcpToolName.MatchString(tool) {
			errs = append(errs, fmt.Errorf("unknown tool %q (known: %s, and an MCP server's tools as mcp__SERVER__TOOL or mcp__SERVER__*)", tool, strings.Join(known, ", ")))
		}
		if perm := p[tool]; !perm.Valid() {
			errs = append(errs, fmt.Errorf("tool %q: permission %q is not allow, ask or deny", tool, perm))
		}
	}
	return errors.Join(errs...)
}

// normalize drops the legacy names that gate nothing.
func (p ToolPolicy) normalize() {
	for _, name := range legacyPolicyNames {
		delete(p, name)
	}
}

// MaxConcurrentVMsCap is the most VMs Settings may allow at once.
const MaxConcurrentVMsCap = 256

// Bounds of CompletionCheckTries and MaxUploadMB.
const (
	MaxCompletionCheckTries = 10
	MaxUploadMBCap          = 10 << 10 // 10 GB
)

// Settings are the user's preferences, persisted in the store. JSON names are
// the wire names of the settings API and the keys of the settings table.
type Settings struct {
	// Capacity. MaxConcurrentVMs is 1 to 256 (default 2): a sandbox costs
	// tens of MB, so a Linux host carries many; a macOS host runs at most 2
	// macOS guests whatever it says.
	MaxConcurrentVMs int `json:"maxConcurrentVMs"`
	WarmPoolSize     int `json:"warmPoolSize"`
	// IdleTimeoutMinutes stops a warm VM nobody used for this long.
	IdleTimeoutMinutes int `json:"idleTimeoutMinutes"`

	// Task defaults.
	DefaultTimeoutMinutes int    `json:"defaultTimeoutMinutes"`
	DefaultMaxIterations  int    `json:"defaultMaxIterations"`
	DefaultTemplateID     string `json:"defaultTemplateId"`
	// CompletionCheckTries is how many completion checks in a row may
	// say a task is not done (the agent is told why and goes on) before
	// it ends failed: 1 to 10 (Swift's maxCompletionAttempts).
	CompletionCheckTries int `json:"completionCheckTries"`
	// TaskBudgetUSD and TaskBudgetTokens pause a task once its LLM use
	// reaches them (0: no budget); a task may set its own.
	TaskBudgetUSD    float64 `json:"taskBudgetUSD"`
	TaskBudgetTokens int64   `json:"taskBudgetTokens"`

	// LimitGraceMinutes holds a task that reaches its step or time limit
	// this long, for the user to continue it, before it ends (0: it ends
	// at once). ReleasePausedVMMinutes releases the VM of a task held by
	// the system (an LLM error, a budget, a limit, a lost guest) after
	// this long; resuming it starts a fresh VM (0: never). Fractions of a
	// minute are allowed.
	LimitGraceMinutes      float64 `json:"limitGraceMinutes"`
	ReleasePausedVMMinutes float64 `json:"releasePausedVMMinutes"`

	// TextOnlyModels are the model ids to run without vision: they get the
	// accessibility tree instead of screenshots (as do models the
	// provider's model list says take no images).
	TextOnlyModels []string `json:"textOnlyModels"`

	// VM defaults for new VMs.
	VMCPUCount int `json:"vmCpuCount"`
	VMMemoryMB int `json:"vmMemoryMB"`
	VMDiskGB   int `json:"vmDiskGB"`

	// ScreenshotMaxWidth and ScreenshotMaxHeight cap what the model sees.
	ScreenshotMaxWidth  int `json:"screenshotMaxWidth"`
	ScreenshotMaxHeight int `json:"screenshotMaxHeight"`

	// API.
	APIPort int `json:"apiPort"`
	// AllowRemoteAccess lets the TCP listener answer non-loopback Host names.
	AllowRemoteAccess bool `json:"allowRemoteAccess"`

	// Files and network.
	OutputDirectory string      `json:"outputDirectory"`
	NetworkMode     NetworkMode `json:"networkMode"`
	// EgressAllowHosts are host names, addresses or CIDR ranges that
	// internet-mode VMs may reach although the egress policy refuses them
	// (the host's own addresses, private and link-local ranges): a NAS, a
	// company proxy. Names are resolved when a VM starts.
	EgressAllowHosts []string `json:"egressAllowHosts"`
	// MaxOutputFileMB and MaxOutputTaskMB cap what is collected from a
	// VM's outbox per file and per task; what is over is left out, and the
	// task's summary says so.
	MaxOutputFileMB int `json:"maxOutputFileMB"`
	MaxOutputTaskMB int `json:"maxOutputTaskMB"`
	// MaxUploadMB caps a request that carries files (a task's,
	// schedule's or preset's input files, all of them together), in MB:
	// 1 to MaxUploadMBCap.
	MaxUploadMB int `json:"maxUploadMB"`

	// WebSearchBackend is the search backend of the host's web_search tool:
	// "searxng" (at WebSearchURL), "brave" (the Brave Search API, its key in
	// the secret store; WebSearchURL overrides its address), or "" for no
	// web_search. read_webpage needs no backend.
	WebSearchBackend string `json:"webSearchBackend"`
	WebSearchURL     string `json:"webSearchURL"`

	// Safety.
	ToolPolicy ToolPolicy `json:"toolPolicy"`
	// TraceRetentionDays deletes session traces older than this; 0 keeps them
	// until the user deletes them.
	TraceRetentionDays int `json:"traceRetentionDays"`
	// KillSwitchShortcut is the global shortcut that stops every agent.
	KillSwitchShortcut string `json:"killSwitchShortcut"`

	// ModelPrices estimate costs, per model id (a trailing "*" matches a
	// prefix), in US dollars per million tokens.
	ModelPrices map[string]ModelPrice `json:"modelPrices"`

	// NotifyEvents are the notifications the menu bar and the open web
	// page show (NotifyEventNames); none: no notification.
	NotifyEvents []string `json:"notifyEvents"`
	// TitleFromDescription keeps a new task's title the start of its
	// description instead of asking its model for one.
	TitleFromDescription bool `json:"titleFromDescription"`

	// WorkerProviderName and WorkerModelID are the worker model: a
	// provider (by name) and one of its models that serve, where a task's
	// own model is not needed, its subagents, task titles and the
	// condensing of long histories. Both empty: the task's own model
	// serves, as before.
	WorkerProviderName string `json:"workerProviderName"`
	WorkerModelID      string `json:"workerModelId"`

	// Advanced.
	DebugLogging bool `json:"debugLogging"`
}

// Notification events of NotifyEvents.
const (
	NotifyCompleted  = "completed"
	NotifyFailed     = "failed" // also timed out, out of steps, failed to plan
	NotifyQuestion   = "question"
	NotifyPermission = "permission"
	NotifyPlan       = "plan"   // a plan waits for approval
	NotifyReview     = "review" // changes to host folders wait for review
)

// NotifyEventNames lists the notification events.
var NotifyEventNames = []string{NotifyCompleted, NotifyFailed, NotifyQuestion, NotifyPermission, NotifyPlan, NotifyReview}

// Notifies reports whether the user wants notifications of event.
func (s Settings) Notifies(event string) bool { return slices.Contains(s.NotifyEvents, event) }

// ModelPrice is a model's price in US dollars per million tokens.
type ModelPrice struct {
	PromptPerMTok     float64 `json:"promptPerMTok"`
	CompletionPerMTok float64 `json:"completionPerMTok"`
	// CacheReadPerMTok and CacheWritePerMTok price prompt tokens read from
	// and written to the provider's prompt cache (extension); unset, a
	// share of the prompt price by provider type (core/llm/prices.go).
	CacheReadPerMTok  *float64 `json:"cacheReadPerMTok,omitempty"`
	CacheWritePerMTok *float64 `json:"cacheWritePerMTok,omitempty"`
}

// Defaults returns the settings of a fresh install on an OS for a user whose
// home directory is userHome.
func Defaults(goos, userHome string) Settings {
	shortcut := "ctrl+shift+escape"
	if goos == "darwin" {
		shortcut = "cmd+shift+escape"
	}
	return Settings{
		// Two is the licence and kernel limit for macOS guests per host, and a
		// sensible start for sandboxes on a small machine.
		MaxConcurrentVMs:      2,
		WarmPoolSize:          1,
		IdleTimeoutMinutes:    30,
		DefaultTimeoutMinutes: 30,
		DefaultMaxIterations:  100,
		CompletionCheckTries:  2,
		MaxUploadMB:           512,
		VMCPUCount:            2,
		VMMemoryMB:            4096,
		VMDiskGB:              32,
		// XGA's box, as a native computer tool's display (llm.DisplayFor):
		// a 1280x800 screen is shown at 1024x640, 4 image tiles, not 6.
		ScreenshotMaxWidth:  1024,
		ScreenshotMaxHeight: 768,
		APIPort:             5482,
		OutputDirectory:     filepath.Join(userHome, "Downloads", "Hivecrew"),
		// Offline unless the user says otherwise: a safety product's VMs
		// reach nothing by default (a task or Settings turns internet on).
		NetworkMode:            NetworkOffline,
		MaxOutputFileMB:        1024,
		MaxOutputTaskMB:        4096,
		ToolPolicy:             ToolPolicy{"run_shell": Ask},
		EgressAllowHosts:       []string{},
		TextOnlyModels:         []string{},
		LimitGraceMinutes:      10,
		ReleasePausedVMMinutes: 10,
		TraceRetentionDays:     0,
		KillSwitchShortcut:     shortcut,
		NotifyEvents:           slices.Clone(NotifyEventNames),
	}
}

// Clone returns a copy of s that shares no map with it.
func (s Settings) Clone() Settings {
	s.ToolPolicy = maps.Clone(s.ToolPolicy)
	s.ModelPrices = maps.Clone(s.ModelPrices)
	// A patch decodes lists into the copy's arrays: they are its own.
	s.NotifyEvents = slices.Clone(s.NotifyEvents)
	s.TextOnlyModels = slices.Clone(s.TextOnlyModels)
	s.EgressAllowHosts = slices.Clone(s.EgressAllowHosts)
	return s
}

// Validate returns every problem in s, each naming its setting, as one error
// of class errdefs.ErrInvalid; nil when s is usable.
func (s Settings) Validate() error {
	var errs []error
	inRange := func(name string, v, lo, hi int) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("%s must be between %d and %d (got %d)", name, lo, hi, v))
		}
	}
	inRange("maxConcurrentVMs", s.MaxConcurrentVMs, 1, MaxConcurrentVMsCap)
	inRange("warmPoolSize", s.WarmPoolSize, 0, 16)
	inRange("idleTimeoutMinutes", s.IdleTimeoutMinutes, 1, 7*24*60)
	inRange("defaultTimeoutMinutes", s.DefaultTimeoutMinutes, 1, 7*24*60)
	inRange("defaultMaxIterations", s.DefaultMaxIterations, 1, 10000)
	inRange("completionCheckTries", s.CompletionCheckTries, 1, MaxCompletionCheckTries)
	inRange("maxUploadMB", s.MaxUploadMB, 1, MaxUploadMBCap)
	if s.LimitGraceMinutes < 0 || s.LimitGraceMinutes > 1440 {
		errs = append(errs, fmt.Errorf("limitGraceMinutes must be between 0 (end at once) and 1440 (got %g)", s.LimitGraceMinutes))
	}
	if s.ReleasePausedVMMinutes < 0 || s.ReleasePausedVMMinutes > 1440 {
		errs = append(errs, fmt.Errorf("releasePausedVMMinutes must be between 0 (never) and 1440 (got %g)", s.ReleasePausedVMMinutes))
	}
	if len(s.TextOnlyModels) > 200 {
		errs = append(errs, fmt.Errorf("textOnlyModels: at most 200 models (got %d)", len(s.TextOnlyModels)))
	}
	for _, m := range s.TextOnlyModels {
		if m == "" || len(m) > 256 || strings.ContainsFunc(m, unicode.IsControl) {
			errs = append(errs, fmt.Errorf("textOnlyModels: %q is not a model id", m))
		}
	}
	if s.TaskBudgetUSD < 0 || s.TaskBudgetUSD > 1e6 {
		errs = append(errs, fmt.Errorf("taskBudgetUSD must be between 0 (none) and 1000000 (got %g)", s.TaskBudgetUSD))
	}
	if s.TaskBudgetTokens < 0 {
		errs = append(errs, fmt.Errorf("taskBudgetTokens must be 0 (none) or more (got %d)", s.TaskBudgetTokens))
	}
	inRange("vmCpuCount", s.VMCPUCount, 1, 64)
	inRange("vmMemoryMB", s.VMMemoryMB, 512, 1<<20)
	inRange("vmDiskGB", s.VMDiskGB, 8, 8192)
	inRange("screenshotMaxWidth", s.ScreenshotMaxWidth, 320, 7680)
	inRange("screenshotMaxHeight", s.ScreenshotMaxHeight, 200, 4320)
	inRange("apiPort", s.APIPort, 1, 65535)
	inRange("traceRetentionDays", s.TraceRetentionDays, 0, 36500)
	inRange("maxOutputFileMB", s.MaxOutputFileMB, 1, 1<<20)
	inRange("maxOutputTaskMB", s.MaxOutputTaskMB, 1, 1<<20)
	if s.WarmPoolSize > s.MaxConcurrentVMs {
		errs = append(errs, fmt.Errorf("warmPoolSize (%d) cannot exceed maxConcurrentVMs (%d)", s.WarmPoolSize, s.MaxConcurrentVMs))
	}
	if s.OutputDirectory == "" || !filepath.IsAbs(s.OutputDirectory) {
		errs = append(errs, fmt.Errorf("outputDirectory must be an absolute path (got %q)", s.OutputDirectory))
	}
	if !s.NetworkMode.Valid() {
		errs = append(errs, fmt.Errorf("networkMode must be %q or %q (got %q)", NetworkInternet, NetworkOffline, s.NetworkMode))
	}
	if err := CheckAllowHosts(s.EgressAllowHosts); err != nil {
		errs = append(errs, fmt.Errorf("egressAllowHosts: %w", err))
	}
	switch {
	case s.WebSearchBackend != "" && s.WebSearchBackend != "searxng" && s.WebSearchBackend != "brave":
		errs = append(errs, fmt.Errorf("webSearchBackend must be \"searxng\", \"brave\" or \"\" (none) (got %q)", s.WebSearchBackend))
	case s.WebSearchBackend == "searxng" && s.WebSearchURL == "":
		errs = append(errs, errors.New("webSearchURL: SearXNG needs its address (e.g. http://localhost:8888)"))
	case s.WebSearchURL != "" && !strings.HasPrefix(s.WebSearchURL, "http://") && !strings.HasPrefix(s.WebSearchURL, "https://"):
		errs = append(errs, fmt.Errorf("webSearchURL %q is not an http(s) address", s.WebSearchURL))
	}
	if err := s.ToolPolicy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("toolPolicy: %w", err))
	}
	for _, model := range slices.Sorted(maps.Keys(s.ModelPrices)) {
		if p := s.ModelPrices[model]; model == "" || p.PromptPerMTok < 0 || p.CompletionPerMTok < 0 ||
			(p.CacheReadPerMTok != nil && *p.CacheReadPerMTok < 0) || (p.CacheWritePerMTok != nil && *p.CacheWritePerMTok < 0) {
			errs = append(errs, fmt.Errorf("modelPrices: %q needs a model id and prices of zero or more", model))
		}
	}
	for i, e := range s.NotifyEvents {
		if !slices.Contains(NotifyEventNames, e) {
			errs = append(errs, fmt.Errorf("notifyEvents: unknown event %q (known: %s)", e, strings.Join(NotifyEventNames, ", ")))
		} else if slices.Index(s.NotifyEvents, e) < i {
			errs = append(errs, fmt.Errorf("notifyEvents: %q is given twice", e))
		}
	}
	if err := checkWorker(s.WorkerProviderName, s.WorkerModelID); err != nil {
		errs = append(errs, err)
	}
	if _, err := shortcut.Parse(s.KillSwitchShortcut); err != nil {
		errs = append(errs, fmt.Errorf("killSwitchShortcut: %w", err))
	}
	if len(errs) == 0 {
		return nil
	}
	return errdefs.Invalidf("invalid settings: %v", errors.Join(errs...))
}

// Patch applies a partial update, a JSON object of setting names to values,
// and returns the validated result; s is not modified. Unknown names, wrong
// types and invalid values are errors of class errdefs.ErrInvalid. A
// toolPolicy or modelPrices in the patch replaces the whole map.
func (s Settings) Patch(patch []byte) (Settings, error) {
	out := s.Clone()
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(patch, &probe); err != nil {
		return s, errdefs.Invalidf("settings patch is not a JSON object: %v", err)
	}
	if _, ok := probe["toolPolicy"]; ok {
		out.ToolPolicy = nil
	}
	if _, ok := probe["modelPrices"]; ok {
		out.ModelPrices = nil
	}
	dec := json.NewDecoder(bytes.NewReader(patch))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return s, errdefs.Invalidf("settings patch: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := out.Validate(); err != nil {
		return s, err
	}
	out.ToolPolicy.normalize()
	if out.EgressAllowHosts == nil {
		out.EgressAllowHosts = []string{}
	}
	if out.TextOnlyModels == nil {
		out.TextOnlyModels = []string{}
	}
	if out.NotifyEvents == nil {
		out.NotifyEvents = []string{}
	}
	return out, nil
}

// HasWorker reports whether Settings name a worker model.
func (s Settings) HasWorker() bool { return s.WorkerProviderName != "" }

// checkWorker checks the worker model's names: both or neither, each one
// line of printable text. That the provider exists is the API's to check
// (Settings do not know the providers).
func checkWorker(provider, model string) error {
	bad := func(v string) bool {
		return len(v) > 256 || strings.ContainsFunc(v, unicode.IsControl) || strings.TrimSpace(v) != v
	}
	switch {
	case (provider == "") != (model == ""):
		return errors.New("workerProviderName and workerModelId go together: set both (the worker model), or neither (each task's own model serves)")
	case bad(provider):
		return fmt.Errorf("workerProviderName %q is not a provider's name", provider)
	case bad(model):
		return fmt.Errorf("workerModelId %q is not a model id", model)
	}
	return nil
}

// hostName is a DNS name: labels of letters, digits and hyphens.
var hostName = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)

// validAllowHost reports whether h is an IP address, a CIDR range or a
// host name.
// CheckAllowHosts validates an egress allowlist: at most 64 host names,
// IP addresses or CIDR ranges.
func CheckAllowHosts(hosts []string) error {
	if len(hosts) > 64 {
		return fmt.Errorf("at most 64 entries (got %d)", len(hosts))
	}
	for _, h := range hosts {
		if !validAllowHost(h) {
			return fmt.Errorf("%q is not a host name, an IP address or a CIDR range", h)
		}
	}
	return nil
}

func validAllowHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if _, _, err := net.ParseCIDR(h); err == nil {
		return true
	}
	return len(h) <= 253 && hostName.MatchString(h)
}
