// Package agent runs one task's agent (docs/architecture.md). Each step it
// observes (a screenshot), decides (the LLM with the tools), acts (guest
// calls, or host tools that ask the user), records (events, screenshots,
// tokens) and checks (cancel, pause, timeout, max iterations). A turn without
// a tool call triggers the structured completion check. The user stays in
// control throughout: pause, resume with instructions, instructions without
// pausing, take over and hand back, answers to questions, approvals, and
// cancel, which interrupts even an LLM request or a guest call in flight.
package agent

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/redact"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Guest is what the agent needs of the guest agent; *guest.Client has it.
type Guest interface {
	Hello() protocol.HelloResult
	Screenshot(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error)
	Call(ctx context.Context, method string, params, result any) error
	// ReadDocument reads a file as the model reads it, checked
	// (guest.Client.ReadDocument); only for a guest whose hello
	// announces protocol.CapDocuments.
	ReadDocument(ctx context.Context, p protocol.ReadDocumentParams) (protocol.DocumentResult, error)
}

// Event is what the agent reports as it works (the API's activity events).
type Event struct {
	Type         string // screenshot, tool_call_start, tool_call_result, llm_response, status_change, question, permission_request
	ActivityType string
	// Tool names the tool of tool_call_* events.
	Tool       string
	Summary    string
	Details    string
	Reasoning  string
	Status     store.TaskStatus
	Screenshot string // path in the session folder
	Usage      llm.Usage
	// Point is where a tool_call_start's action aims on the screenshot
	// the model saw, if it aims at a point.
	Point *store.EventPoint
	// Subagent is the subagent a subagent_update event is about.
	Subagent string
}

// Live is a piece of the model's answer to a step as it streams.
type Live struct {
	Step int
	// Restart says the answer starts over (the request is asked again).
	Restart         bool
	Text, Reasoning string
}

// Task is the work and its limits.
type Task struct {
	ID            string
	Description   string
	Network       config.NetworkMode
	Policy        config.ToolPolicy
	Timeout       time.Duration
	MaxIterations int
	// ShotW and ShotH cap the screenshots the model sees.
	ShotW, ShotH int
	// KeepImages is the most recent screenshots sent as images (default 3;
	// older ones become notes KeepImages at a time, see llm.Window).
	KeepImages int
	// MaxFailedChecks ends the task as failed after this many completion
	// checks in a row say it is not done (default 2).
	MaxFailedChecks int
	// ContextTokens is the model's context window (default
	// llm.DefaultContextTokens); ContextShare the share of it a request may
	// fill before the history is condensed (default DefaultContextShare).
	ContextTokens int
	ContextShare  float64
	// LimitGrace, when set, holds a task that reaches its step or time
	// limit that long for the user to continue it (hold.go) before it ends.
	LimitGrace time.Duration
	// TextOnly is for a model without vision: each step shows it the
	// accessibility tree and the running applications instead of a
	// screenshot, and it acts on elements by id (elements.go) and with the
	// keyboard, not with the pointer.
	TextOnly bool
	// BudgetUSD and BudgetTokens pause the task once its LLM use reaches
	// them (0: none; see budget.go). Guarded by the runner's mu.
	BudgetUSD    float64
	BudgetTokens int64
	// Todo is the checklist the task starts with (todo.go): the approved
	// plan's items, or what a resumed task had.
	Todo []store.TodoItem
	// Host says the agent has no VM (hostonly.go): a research subagent,
	// with the host tools alone.
	Host bool
}

// Config configures a Runner. Task, LLM, Guest (not used with Task.Host),
// Trace and Log are required.
type Config struct {
	Task Task
	LLM  *llm.Client
	// Condenser, if set, condenses long histories (history.go) in the
	// task's model's stead: the worker model of Settings.
	Condenser *llm.Client
	Guest     Guest
	Trace     *trace.Writer
	Log       *slog.Logger
	// Emit, if set, receives every event (after it is in the trace).
	Emit func(Event)
	// Vault, if set, holds the credentials use_credential may type.
	Vault Vault
	// HostTools are the tools the host runs for this task (hosttools.go):
	// MCP servers', web search and reading, skills, subagents.
	HostTools []HostTool
	// Prompt adds lines to the system prompt (the skills on offer, say).
	Prompt []string
	// Context goes before the task in its first message (the instructions
	// of the skills the user mentioned).
	Context string
	// Children, if set, are the task's subagents: a turn that ends without
	// a tool call waits for those still running before the completion
	// check, and their results arrive as notes (Runner.Note).
	Children Children
	// Live, if set, hears the model's answer as it streams; the model is
	// then asked for a stream. What it hears is not recorded: the
	// llm_response event that follows is.
	Live func(Live)
	// Now is the clock for the prompt's date; default time.Now.
	Now func() time.Time
	// Changed, if set, is called (outside any lock) whenever the pause
	// state, the pending question or the pending permission changes.
	Changed func()
	// Provision is what the VM is given before the first step
	// (provision.go).
	Provision provision.Plan
	// Resume, when set, is a conversation the task had before (the
	// session's, read with LoadConversation): the run goes on from it, in
	// the same trace, with its steps and usage counted from Resume's.
	Resume *Resume
	// Todo, if set, hears the checklist whenever the todo tool changes it.
	Todo func([]store.TodoItem)
}

// Resume is where a resumed task left off.
type Resume struct {
	Conversation []llm.Message
	Steps        int
	Usage        llm.Usage
	// Note tells the model what happened (a restart, a fresh VM).
	Note string
}

// Result is how a run ended.
type Result struct {
	Status  store.TaskStatus
	Summary string
	// Success is the completion check's verdict, when there was one.
	Success *bool
	Steps   int
	Usage   llm.Usage
	CostUSD float64
	// Summaries is how many times the history was condensed.
	Summaries int
}

// Runner runs one task. Its intervention methods may be called from any
// goroutine while Run runs.
type Runner struct {
	cfg  Config
	ctl  *control
	task Task

	// mu guards status, reason, steps, usage, childUsage, traceErr and
	// todo.
	mu     sync.Mutex
	status store.TaskStatus
	reason string
	steps  int
	usage  llm.Usage
	// childUsage is the LLM use of the task's subagents: it counts against
	// its budget, not in its own usage (each task reports its own).
	childUsage llm.Usage
	// traceErr is the first failure to write the trace; the run ends with
	// it before the next step (an agent never works unrecorded).
	traceErr error
	// todo is the checklist (todo.go).
	todo []store.TodoItem

	// msgs is the conversation (the loop's); saved how many of its
	// messages are in the trace (conversation.go).
	msgs  []llm.Message
	saved int
	// system, toolDefs and display are what every request carries (set
	// before the first step); display is nil unless the model acts through
	// its provider's computer tool (native.go).
	system   string
	toolDefs []llm.Tool
	display  *llm.Display
	// shown is the result of the last native action of the step that ran:
	// the next screen is shown in it (the loop's).
	shown *llm.ToolResult
	// offered are the tools offered to the model, set once before the first
	// step: a call to any other name never reaches the guest.
	offered map[string]bool
	// toolTokens estimates the tool definitions' share of each request.
	toolTokens int
	// summaries counts condensed histories (guarded by mu).
	summaries int
	// condensedAt is the step of the last summary (the loop's).
	condensedAt int
	// namesOnly tells the task once that its guest cannot resolve app
	// names (opengate.go).
	namesOnly sync.Once
	// live gathers the output of the run_shell call in flight.
	live liveShell
	// deadline is the time limit, hard the timer that stops the run at the
	// deadline plus the limit grace (guarded by mu); baseSteps and
	// baseTimeout are the limits the task started with.
	deadline    time.Time
	hard        *time.Timer
	baseSteps   int
	baseTimeout time.Duration
	// redactor holds the task's secrets (its credentials' passwords, the
	// codes typed, its secret variables), which filter keeps out of
	// everything the runner lets out; credOK are the credentials the user
	// approved (the loop's).
	redactor redact.Redactor
	credOK   map[string]bool
	// env are the provisioned variables every run_shell gets (set before
	// the first step).
	env map[string]string
	// hostTools are the host tools offered, by name (hosttools.go).
	hostTools map[string]*hostTool
	// elements are the elements of the last accessibility tree read, by
	// the ids the model was shown (elements.go). Used by the loop only.
	elements map[string]element

	// stop is cancelled by Cancel (with its cause); Run follows it.
	stop   context.Context
	cancel context.CancelCauseFunc
}

// New returns a runner.
func New(cfg Config) (*Runner, error) {
	if cfg.Task.Host {
		cfg.Guest = noVM{} // whatever it was given: nothing reaches a VM
	}
	if cfg.LLM == nil || cfg.Guest == nil || cfg.Trace == nil || cfg.Log == nil {
		return nil, errors.New("agent: LLM, Guest, Trace and Log are required")
	}
	t := &cfg.Task
	if t.Timeout == 0 {
		t.Timeout = 30 * time.Minute
	}
	if t.MaxIterations == 0 {
		t.MaxIterations = 100
	}
	if t.ShotW == 0 {
		t.ShotW, t.ShotH = llm.DisplayBoxWidth, llm.DisplayBoxHeight
	}
	if t.KeepImages == 0 {
		t.KeepImages = llm.DefaultKeepImages
	}
	if t.MaxFailedChecks == 0 {
		t.MaxFailedChecks = 2
	}
	if t.ContextTokens <= 0 {
		t.ContextTokens = llm.DefaultContextTokens
	}
	if t.ContextShare <= 0 || t.ContextShare > 1 {
		t.ContextShare = DefaultContextShare
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Runner{cfg: cfg, task: *t, status: store.StatusRunning, credOK: map[string]bool{}, todo: slices.Clone(t.Todo)}
	r.ctl = newControl(cfg.Changed, r.filter)
	if res := cfg.Resume; res != nil {
		r.msgs, r.saved = res.Conversation, len(res.Conversation)
		r.steps, r.usage = res.Steps, res.Usage
		if res.Note != "" {
			r.ctl.note(res.Note)
		}
	}
	r.stop, r.cancel = context.WithCancelCause(context.Background())
	return r, nil
}

// filter is what the runner lets out of a text, wherever it goes: to the
// model, an event (and so the trace, the database, the activity feed, a
// webhook, hivecrew logs and exports), the task's status and result, a
// question or a permission request. The task's secrets are redacted in
// every spelling the redactor knows, and control and formatting
// characters (terminal escapes, bidirectional overrides) are shown as
// escapes. Error text passes it like any other.
func (r *Runner) filter(s string) string { return redact.PrintableText(r.redactor.Redact(s)) }

// emit records an event in the trace and passes it on, filtered.
func (r *Runner) emit(step int, e Event) {
	e.Summary, e.Details, e.Reasoning = r.filter(e.Summary), r.filter(e.Details), r.filter(e.Reasoning)
	te := trace.Event{Type: e.Type, Step: step, Tool: e.Tool, Summary: e.Summary, Details: e.Details, Reasoning: e.Reasoning,
		Status: string(e.Status), Screenshot: e.Screenshot, PromptTokens: e.Usage.Prompt, CompletionTokens: e.Usage.Completion}
	if _, err := r.cfg.Trace.Append(te); err != nil {
		r.traceFailed(err)
	}
	if r.cfg.Emit != nil {
		r.cfg.Emit(e)
	}
}

// traceFailed notes a failure to write the trace; the first one ends the run.
func (r *Runner) traceFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.traceErr == nil {
		r.traceErr = err
	}
}

// unrecorded returns the run's end when its trace could not be written.
func (r *Runner) unrecorded() (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.traceErr == nil {
		return Result{}, false
	}
	return Result{Status: store.StatusFailed, Summary: "The session could not be recorded, so the agent stopped: " + r.traceErr.Error()}, true
}
