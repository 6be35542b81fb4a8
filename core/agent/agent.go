// Package agent runs one task's agent: the loop of DESIGN.md. Each step it
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
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Guest is what the agent needs of the guest agent; *guest.Client has it.
type Guest interface {
	Hello() protocol.HelloResult
	Screenshot(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error)
	Call(ctx context.Context, method string, params, result any) error
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
}

// Config configures a Runner. Task, LLM, Guest, Trace and Log are required.
type Config struct {
	Task  Task
	LLM   *llm.Client
	Guest Guest
	Trace *trace.Writer
	Log   *slog.Logger
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

	// mu guards status, reason, steps, usage, childUsage and traceErr.
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

	// offered are the tools offered to the model, set once before the first
	// step: a call to any other name never reaches the guest.
	offered map[string]bool
	// toolTokens estimates the tool definitions' share of each request.
	toolTokens int
	// summaries counts condensed histories (guarded by mu).
	summaries int
	// live gathers the output of the run_shell call in flight.
	live liveShell
	// deadline is the time limit, hard the timer that stops the run at the
	// deadline plus the limit grace (guarded by mu); baseSteps and
	// baseTimeout are the limits the task started with.
	deadline    time.Time
	hard        *time.Timer
	baseSteps   int
	baseTimeout time.Duration
	// redactor keeps the secrets typed in this task out of what the guest
	// shows back; credOK are the credentials the user approved (the loop's).
	redactor redactor
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

// Errors a run ends with.
var (
	errCancelled = errors.New("cancelled by the user")
	errTimedOut  = errors.New("the task's time limit passed")
)

// New returns a runner.
func New(cfg Config) (*Runner, error) {
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
		t.ShotW, t.ShotH = 1280, 800
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
	r := &Runner{cfg: cfg, task: *t, status: store.StatusRunning, ctl: newControl(cfg.Changed), credOK: map[string]bool{}}
	r.stop, r.cancel = context.WithCancelCause(context.Background())
	return r, nil
}

// emit records an event in the trace and passes it on.
func (r *Runner) emit(step int, e Event) {
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

func (r *Runner) setStatus(s store.TaskStatus, reason string) {
	r.mu.Lock()
	changed := r.status != s || r.reason != reason
	r.status, r.reason = s, reason
	r.mu.Unlock()
	if changed {
		r.emit(r.Steps(), Event{Type: "status_change", ActivityType: "info", Status: s, Summary: statusSummary(s, reason)})
	}
}

func statusSummary(s store.TaskStatus, reason string) string {
	if reason != "" {
		return fmt.Sprintf("%s: %s", s, reason)
	}
	return string(s)
}

// Status returns the task's status and why.
func (r *Runner) Status() (store.TaskStatus, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.reason
}

// Steps returns the number of steps taken.
func (r *Runner) Steps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.steps
}

// Usage returns the tokens used so far.
func (r *Runner) Usage() llm.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usage
}

// Pending returns the question or permission request the task waits on.
func (r *Runner) Pending() (*Question, *Permission) {
	_, _, _, q, p := r.ctl.snapshot()
	return q, p
}

// Pause stops the agent before its next action.
func (r *Runner) Pause() {
	r.ctl.pause("paused by the user", false)
	r.setStatus(store.StatusPaused, "paused by the user")
}

// TakeOver pauses the agent and hands the VM to the user.
func (r *Runner) TakeOver() {
	r.ctl.pause("the user is in control", true)
	r.setStatus(store.StatusPaused, "the user is in control")
}

// Resume lets a paused agent go on; instructions, if any, reach the model
// on its next turn. HandBack after TakeOver is the same call.
func (r *Runner) Resume(instructions string) bool {
	if !r.ctl.resume(instructions) {
		return false
	}
	r.setStatus(store.StatusRunning, "")
	return true
}

// Instruct adds instructions for the model's next turn without pausing.
func (r *Runner) Instruct(text string) { r.ctl.instruct(text) }

// Answer answers the pending question.
func (r *Runner) Answer(id, text string) error { return r.ctl.answer(id, text) }

// Respond approves or denies the pending permission request.
func (r *Runner) Respond(id string, approved bool) error { return r.ctl.respond(id, approved) }

// Cancel stops the run at once, interrupting an LLM request or guest call
// in flight.
func (r *Runner) Cancel() { r.cancel(errCancelled) }

// Run runs the task to its end and returns how it ended. It never returns
// a running or paused status.
func (r *Runner) Run(ctx context.Context) Result {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	follow := context.AfterFunc(r.stop, func() { cancel(context.Cause(r.stop)) })
	defer follow()
	r.mu.Lock()
	r.baseSteps, r.baseTimeout = r.task.MaxIterations, r.task.Timeout
	r.hard = time.AfterFunc(time.Hour, func() { cancel(errTimedOut) })
	r.setDeadlineLocked(time.Now().Add(r.task.Timeout))
	r.mu.Unlock()
	defer r.hard.Stop()

	res, ok := r.provision(ctx)
	if ok {
		res = r.loop(ctx)
	}
	res.Steps, res.Usage = r.Steps(), r.Usage()
	r.mu.Lock()
	res.Summaries = r.summaries
	r.mu.Unlock()
	res.CostUSD, _ = r.cfg.LLM.Cost(res.Usage)
	r.setStatus(res.Status, "")
	if err := r.cfg.Trace.Sync(); err != nil {
		r.cfg.Log.Error("trace", "task", r.task.ID, "err", err)
	}
	return res
}

// ended turns a context's end into the run's result.
func ended(ctx context.Context) Result {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCancelled):
		return Result{Status: store.StatusCancelled, Summary: "Cancelled by the user."}
	case errors.Is(cause, errTimedOut):
		return Result{Status: store.StatusTimedOut, Summary: "The task did not finish within its time limit."}
	case cause == nil:
		return Result{Status: store.StatusCancelled, Summary: "Stopped."}
	default:
		return Result{Status: store.StatusCancelled, Summary: "Stopped: " + cause.Error()}
	}
}

func (r *Runner) loop(ctx context.Context) Result {
	hello := r.cfg.Guest.Hello()
	var creds []CredentialInfo
	if r.cfg.Vault != nil && r.task.Policy.For(config.UseCredential) != config.Deny {
		creds = r.cfg.Vault.Credentials()
	}
	system := systemPrompt(promptInfo{
		GuestOS: hello.OS, OSVersion: hello.OSVersion, SharedPath: hello.SharedPath, Network: string(r.task.Network),
		Policy: r.task.Policy, Date: r.cfg.Now(), ScreenW: hello.Screen.Width, ScreenH: hello.Screen.Height,
		MaxSteps: r.task.MaxIterations, TimeoutMins: int(r.task.Timeout.Minutes()), TextOnly: r.task.TextOnly,
		Credentials: credentialNames(creds), Extra: r.cfg.Prompt,
	})
	first := "Task: " + r.task.Description
	if r.cfg.Context != "" {
		first = r.cfg.Context + "\n\n" + first
	}
	messages := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system},
		{Role: openai.ChatMessageRoleUser, Content: first},
	}
	denied := func(tool string) bool { return r.task.Policy.For(tool) == config.Deny }
	toolDefs := tools(denied, r.task.TextOnly)
	hosted, problems := prepareHostTools(r.cfg.HostTools)
	r.hostTools = hosted
	for _, p := range problems {
		r.emit(0, Event{Type: "status_change", ActivityType: "info", Summary: p})
	}
	toolDefs = append(toolDefs, r.hostToolDefs()...)
	if len(creds) == 0 {
		// Nothing stored, nothing to type: the tool is not offered.
		toolDefs = slices.DeleteFunc(toolDefs, func(t openai.Tool) bool { return t.Function.Name == config.UseCredential })
	}
	r.offered = make(map[string]bool, len(toolDefs))
	for _, d := range toolDefs {
		r.offered[d.Function.Name] = true
	}
	r.toolTokens = toolsTokens(toolDefs)
	failedChecks := 0
	saved := 0 // messages already in the trace's conversation
	for {
		if res, ok := r.unrecorded(); ok {
			return res
		}
		if err := r.ctl.waitResumed(ctx); err != nil {
			return ended(ctx)
		}
		if ctx.Err() != nil {
			return ended(ctx)
		}
		if which := r.limit(); which != "" {
			if r.task.LimitGrace > 0 && r.holdAtLimit(ctx, which) {
				continue
			}
			if ctx.Err() != nil {
				return ended(ctx)
			}
			if which == "time" {
				return Result{Status: store.StatusTimedOut, Summary: "The task did not finish within its time limit."}
			}
			return Result{Status: store.StatusMaxIterations, Summary: fmt.Sprintf("Stopped after %d steps without finishing.", r.Steps())}
		}
		r.mu.Lock()
		r.steps++
		step := r.steps
		r.mu.Unlock()

		// Observe.
		obs, mapping, err := r.observe(ctx, step)
		if err != nil {
			if ctx.Err() != nil {
				return ended(ctx)
			}
			if r.guestGone(ctx, err) {
				// The step is taken again once the user resumes.
				r.mu.Lock()
				r.steps--
				r.mu.Unlock()
				if err := r.holdForGuest(ctx, err); err != nil {
					return ended(ctx)
				}
				continue
			}
			return Result{Status: store.StatusFailed, Summary: "The VM could not be observed: " + err.Error()}
		}
		messages = append(messages, obs)
		// The transcript gets each message once, as text: the screenshots
		// are in the trace already.
		if err := r.cfg.Trace.AppendConversation(toAny(llm.Compact(messages[saved:], 0))...); err != nil {
			r.traceFailed(err)
		}
		saved = len(messages)

		// Fit the model's context window.
		if long, est := r.tooLong(messages); long {
			why := fmt.Sprintf("the next request, about %d tokens, would pass %.0f%% of the model's %d-token window", est, r.task.ContextShare*100, r.task.ContextTokens)
			if m, err := r.condense(ctx, step, messages, why); err == nil {
				messages = m
			} else if ctx.Err() != nil {
				return ended(ctx)
			} else {
				r.cfg.Log.Warn("history not condensed", "err", err)
			}
			saved = len(messages)
		}

		// Decide.
		reply, fitted, err := r.decide(ctx, step, messages, toolDefs)
		if err != nil {
			return r.failed(ctx, err)
		}
		if len(fitted) != len(messages) {
			saved = len(fitted) // condensed after an overflow: the summary is in the trace
		}
		messages = fitted
		messages = append(messages, reply.Message)

		// A turn without tool calls: is the task done? Not while its
		// subagents work: their results come first.
		if len(reply.ToolCalls) == 0 && r.waitForChildren(ctx, step) {
			if ctx.Err() != nil {
				return ended(ctx)
			}
			continue
		}
		if len(reply.ToolCalls) == 0 {
			verdict, err := r.check(ctx, step, messages)
			if err != nil {
				return r.failed(ctx, err)
			}
			if verdict.Success {
				ok := true
				return Result{Status: store.StatusCompleted, Summary: verdict.Summary, Success: &ok}
			}
			failedChecks++
			if failedChecks >= r.task.MaxFailedChecks {
				ok := false
				return Result{Status: store.StatusFailed, Summary: verdict.Summary, Success: &ok}
			}
			messages = append(messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
				Content: "The completion check says the task is not done yet: " + verdict.Summary + "\nContinue, or if it cannot be done, say why without calling a tool."})
			continue
		}
		failedChecks = 0

		// Act, in order.
		for i, call := range reply.ToolCalls {
			if r.ctl.isPaused() {
				// The user paused or took over: the remaining calls are not made.
				for _, rest := range reply.ToolCalls[i:] {
					messages = append(messages, toolMessage(rest.ID, "Not done: the user paused the agent before this action."))
				}
				break
			}
			out := r.act(ctx, step, call, mapping)
			if ctx.Err() != nil {
				return ended(ctx)
			}
			messages = append(messages, toolMessage(call.ID, out))
		}
		if err := r.cfg.Trace.Sync(); err != nil {
			r.traceFailed(err)
		}
	}
}

func toAny[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func toolMessage(id, content string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: id, Content: content}
}

// observe takes a screenshot and returns the user message for this turn
// (with any instructions the user added) and the coordinate mapping.
func (r *Runner) observe(ctx context.Context, step int) (_ openai.ChatCompletionMessage, _ mapping, err error) {
	notes := r.ctl.takeNotes()
	if len(notes) > 0 {
		r.elements = nil // a new VM perhaps: the old ids are gone
	}
	defer func() {
		if err != nil { // the step is taken again: so are its notes
			for _, n := range notes {
				r.ctl.note(n)
			}
		}
	}()
	shot, err := r.cfg.Guest.Screenshot(ctx, protocol.ScreenshotParams{Format: protocol.FormatPNG, MaxWidth: r.task.ShotW, MaxHeight: r.task.ShotH})
	if err != nil {
		return openai.ChatCompletionMessage{}, mapping{}, err
	}
	scr := r.cfg.Guest.Hello().Screen
	m := mapping{shotW: shot.Width, shotH: shot.Height, screenW: scr.Width, screenH: scr.Height}
	rel, err := r.cfg.Trace.Screenshot(shot.Format, shot.Data)
	if err != nil {
		r.traceFailed(err)
	}
	r.emit(step, Event{Type: "screenshot", ActivityType: "observation", Summary: fmt.Sprintf("Screenshot %dx%d", shot.Width, shot.Height), Screenshot: rel})
	text := fmt.Sprintf("Step %d. The screen now (%dx%d pixels):", step, shot.Width, shot.Height)
	var parts []openai.ChatMessagePart
	if r.task.TextOnly {
		// The screenshot is for the user and the trace; the model reads.
		view, err := r.screenText(ctx)
		if err != nil {
			return openai.ChatCompletionMessage{}, mapping{}, err
		}
		text = fmt.Sprintf("Step %d. The screen now, as text (you get no screenshots: act on elements by their ids, and with the keyboard):\n%s", step, r.redactor.redact(view))
	} else {
		part, err := llm.ImagePart(shot.Format, shot.Data, r.task.ShotW, r.task.ShotH)
		if err != nil {
			return openai.ChatCompletionMessage{}, mapping{}, err
		}
		parts = append(parts, part)
	}
	if len(notes) > 0 {
		text = "Note from Hivecrew: " + strings.Join(notes, "\n") + "\n\n" + text
	}
	if reps := r.ctl.takeReports(); len(reps) > 0 {
		text = strings.Join(reps, "\n\n") + "\n\n" + text
	}
	if ins := r.ctl.takeInstructions(); len(ins) > 0 {
		text = "New instructions from the user: " + strings.Join(ins, "\n") + "\n\n" + text
		r.emit(step, Event{Type: "status_change", ActivityType: "user_answer", Summary: "Instructions from the user: " + strings.Join(ins, " / ")})
	}
	if len(parts) == 0 {
		return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text}, m, nil
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, MultiContent: append([]openai.ChatMessagePart{
		{Type: openai.ChatMessagePartTypeText, Text: text}}, parts...)}, m, nil
}

// screenText is the screen for a model without vision: the application in
// front, the running ones, and the visible accessibility tree, numbered.
func (r *Runner) screenText(ctx context.Context) (string, error) {
	var b strings.Builder
	var front protocol.FrontmostApp
	if err := r.cfg.Guest.Call(ctx, protocol.MethodFrontmostApp, struct{}{}, &front); err == nil {
		fmt.Fprintf(&b, "In front: %q", clean(front.Name, elementTextMax))
		if front.WindowTitle != "" {
			fmt.Fprintf(&b, ", window %q", clean(front.WindowTitle, elementTextMax))
		}
		b.WriteString("\n")
	}
	var apps protocol.RunningApps
	if err := r.cfg.Guest.Call(ctx, protocol.MethodRunningApps, struct{}{}, &apps); err == nil && len(apps.Apps) > 0 {
		names := make([]string, 0, len(apps.Apps))
		for _, a := range apps.Apps[:min(len(apps.Apps), 40)] {
			names = append(names, strconv.Quote(clean(a.Name, 60)))
		}
		fmt.Fprintf(&b, "Running: %s\n", strings.Join(names, ", "))
	}
	tree, err := r.readTree(ctx, protocol.AccessibilityParams{OnlyVisible: true}, nil)
	if err != nil {
		return "", fmt.Errorf("read the accessibility tree: %w", err)
	}
	b.WriteString("Accessibility tree (visible elements):\n")
	b.WriteString(tree)
	return b.String(), nil
}

// decide asks the model and returns its reply with the conversation it
// was asked with (condensed, if the provider said the prompt was too long:
// that is done once a step, then the same request is sent again). When
// the provider keeps failing, the task pauses with the error and the same
// turn is retried after the user resumes.
func (r *Runner) decide(ctx context.Context, step int, messages []openai.ChatCompletionMessage, toolDefs []openai.Tool) (llm.Reply, []openai.ChatCompletionMessage, error) {
	condensed := false
	for {
		if err := r.withinBudget(ctx); err != nil {
			return llm.Reply{}, messages, err
		}
		var onDelta func(llm.Delta)
		if r.cfg.Live != nil {
			onDelta = func(d llm.Delta) {
				r.cfg.Live(Live{Step: step, Restart: d.Restart, Text: d.Text, Reasoning: d.Reasoning})
			}
		}
		reply, err := r.cfg.LLM.CompleteStream(ctx, llm.Window(messages, r.task.KeepImages), toolDefs, onDelta)
		if err != nil && llm.IsContextOverflow(err) && !condensed && ctx.Err() == nil {
			condensed = true
			if m, cerr := r.condense(ctx, step, messages, "the provider refused the prompt as too long: "+err.Error()); cerr == nil {
				messages = m
				continue
			}
		}
		if err == nil {
			r.addUsage(reply.Usage)
			names := make([]string, len(reply.ToolCalls))
			for i, c := range reply.ToolCalls {
				names[i] = c.Name
			}
			summary := reply.Text
			if summary == "" {
				summary = "Calls " + strings.Join(names, ", ")
			}
			r.emit(step, Event{Type: "llm_response", ActivityType: "llm_response", Summary: summary, Reasoning: reply.Text,
				Details: truncate(reply.Reasoning, 8000), Usage: reply.Usage})
			return reply, messages, nil
		}
		if err := r.pauseForLLM(ctx, step, err); err != nil {
			return llm.Reply{}, messages, err
		}
	}
}

// refused is an LLM error that waiting cannot fix: the provider refused
// the key, or does not know the model.
type refused struct{ err error }

func (e refused) Error() string { return e.err.Error() }

// failed turns an error that ended the loop into the run's result.
func (r *Runner) failed(ctx context.Context, err error) Result {
	var ref refused
	if errors.As(err, &ref) {
		ok := false
		return Result{Status: store.StatusFailed, Summary: "LLM error: " + ref.Error(), Success: &ok}
	}
	return ended(ctx)
}

// pauseForLLM pauses the task with the provider's error, once the client's
// retries are spent, and waits for the user to resume (the caller then
// retries the same call). A refused key or an unknown model fails the task
// instead: the user has to fix the provider, not resume.
func (r *Runner) pauseForLLM(ctx context.Context, step int, llmErr error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	reason := "LLM error: " + llmErr.Error()
	r.emit(step, Event{Type: "llm_response", ActivityType: "error", Summary: reason})
	var le *llm.Error
	if errors.As(llmErr, &le) && (le.Status == 401 || le.Status == 403 || le.Status == 404) {
		return refused{llmErr}
	}
	r.ctl.hold(reason)
	r.setStatus(store.StatusPaused, reason)
	return r.ctl.waitResumed(ctx)
}

func (r *Runner) addUsage(u llm.Usage) {
	r.mu.Lock()
	r.usage = r.usage.Add(u)
	r.mu.Unlock()
}

// check runs the structured completion check.
func (r *Runner) check(ctx context.Context, step int, messages []openai.ChatCompletionMessage) (llm.Verdict, error) {
	ask := append(llm.Compact(messages, 1), openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
		Content: "Was the task fully accomplished? Judge by the latest screen and the steps taken. Answer with success and a one-paragraph summary of the result."})
	for {
		if err := r.withinBudget(ctx); err != nil {
			return llm.Verdict{}, err
		}
		v, u, err := r.cfg.LLM.Verify(ctx, ask)
		r.addUsage(u)
		if err == nil {
			r.emit(step, Event{Type: "llm_response", ActivityType: "llm_response", Summary: fmt.Sprintf("Completion check: success=%v. %s", v.Success, v.Summary), Usage: u})
			return v, nil
		}
		if err := r.pauseForLLM(ctx, step, err); err != nil {
			return llm.Verdict{}, err
		}
	}
}

// act runs one tool call and returns what the model is told.
func (r *Runner) act(ctx context.Context, step int, call llm.ToolCall, m mapping) string {
	r.emit(step, Event{Type: "tool_call_start", ActivityType: "tool_call", Tool: call.Name, Summary: call.Name + " " + string(call.Arguments), Point: actionPoint(call, m)})
	out, err := r.run(ctx, step, call, m)
	out = r.redactor.redact(out) // what the guest shows back of a typed secret
	summary := call.Name + " " + firstLine(out)
	activity := "tool_result"
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped from outside (cancel, kill switch, time limit): the
		// call did not fail, it was cut short.
		out = "Interrupted: " + interruption(ctx)
		summary, activity = call.Name+" interrupted: "+interruption(ctx), "info"
	case err != nil:
		out = "Error: " + err.Error()
		summary, activity = call.Name+" failed: "+err.Error(), "error"
	}
	r.emit(step, Event{Type: "tool_call_result", ActivityType: activity, Tool: call.Name, Summary: summary, Details: truncate(out, 4000)})
	return truncate(out, 16000)
}

// interruption says in words why ctx ended.
func interruption(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCancelled):
		return "the task was cancelled"
	case errors.Is(cause, errTimedOut):
		return "the task reached its time limit"
	case cause != nil && !errors.Is(cause, context.Canceled):
		return cause.Error()
	}
	return "the task was stopped"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return truncate(line, 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… [truncated]"
}

// run executes a tool call: host tools ask the user; guest tools go to the
// guest after the policy and coordinate mapping. Only the tools offered to
// the model run: any other name (a guest method such as shutdown or
// hello, a tool the policy denies, a made-up one) is refused here and never
// reaches the guest.
func (r *Runner) run(ctx context.Context, step int, call llm.ToolCall, m mapping) (string, error) {
	if !r.offered[call.Name] {
		if call.Name == config.UseCredential && r.task.Policy.For(config.UseCredential) != config.Deny {
			return "", fmt.Errorf("no credentials are stored (the user adds them in Settings › Credentials): log in with what the user tells you, or ask")
		}
		if r.task.TextOnly && slices.Contains(pointerTools, call.Name) {
			return "", fmt.Errorf("%s aims at a screenshot, and this model gets none: act on elements by id (click_element, set_element_value) and with the keyboard", call.Name)
		}
		if slices.Contains(config.AgentTools, call.Name) {
			return "", fmt.Errorf("%s is not allowed for this task", call.Name)
		}
		return "", fmt.Errorf("there is no tool %q: the tools you can call are %s", truncate(call.Name, 64), strings.Join(slices.Sorted(maps.Keys(r.offered)), ", "))
	}
	if t := r.hostTools[call.Name]; t != nil {
		return r.runHost(ctx, step, t, call.Arguments)
	}
	var args map[string]any
	if err := json.Unmarshal(call.Arguments, &args); err != nil || args == nil {
		return "", fmt.Errorf("%s: the arguments are not a JSON object: %s", call.Name, truncate(string(call.Arguments), 200))
	}
	if err := checkArgs(call.Name, args); err != nil {
		return "", err
	}
	switch call.Name {
	case "ask_text_question", "ask_multiple_choice":
		q, _ := args["question"].(string)
		var options []string
		if raw, ok := args["options"].([]any); ok {
			for _, o := range raw {
				if s, ok := o.(string); ok {
					options = append(options, s)
				}
			}
		}
		r.emit(step, Event{Type: "question", ActivityType: "user_question", Summary: q, Details: strings.Join(options, " | ")})
		answer, _, err := r.ctl.ask(ctx, q, options)
		if err != nil {
			return "", err
		}
		r.emit(step, Event{Type: "status_change", ActivityType: "user_answer", Summary: "Answer: " + answer})
		return "The user answered: " + answer, nil
	case "request_user_intervention":
		reason, _ := args["reason"].(string)
		r.ctl.pause("the agent asks for help: "+reason, false)
		r.setStatus(store.StatusPaused, "the agent asks for help: "+reason)
		if err := r.ctl.waitResumed(ctx); err != nil {
			return "", err
		}
		return "The user handed control back.", nil
	case "screenshot":
		return "A new screenshot comes with the next turn.", nil
	case config.UseCredential:
		return r.useCredential(ctx, step, args, string(call.Arguments))
	}
	// The permission: the tool's own, or open_terminal's for a call that
	// opens a terminal, a shell or an interpreter.
	gate, what := call.Name, call.Name
	if target, ok := opensTerminal(call.Name, args); ok {
		gate, what = config.OpenTerminal, fmt.Sprintf("%s (opens a terminal or shell: %q)", call.Name, truncate(target, 200))
	}
	if gates := elementGates[call.Name]; gates != nil {
		// An element tool is what it does: a denied click denies clicking
		// an element, and a click that asks asks for it too.
		gate = gates[0]
		for _, g := range gates {
			if p := r.task.Policy.For(g); p == config.Deny || (p == config.Ask && r.task.Policy.For(gate) != config.Deny) {
				gate = g
			}
		}
		what = fmt.Sprintf("%s (%s)", gate, call.Name)
	}
	switch r.task.Policy.For(gate) {
	case config.Deny:
		if gate == config.OpenTerminal {
			return "", fmt.Errorf("opening a terminal, a shell or an interpreter is not allowed for this task (%s)", what)
		}
		return "", fmt.Errorf("%s is not allowed for this task", call.Name)
	case config.Ask:
		r.emit(step, Event{Type: "permission_request", ActivityType: "user_question", Summary: "Approve " + what + "?", Details: string(call.Arguments)})
		ok, _, err := r.ctl.requestPermission(ctx, gate, string(call.Arguments))
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("the user denied %s", what)
		}
	}
	if elementGates[call.Name] != nil {
		return r.runElement(ctx, call.Name, args, m)
	}
	if call.Name == protocol.MethodAccessibilityTree {
		var p protocol.AccessibilityParams
		p.App, _ = args["app"].(string)
		if d, ok := args["maxDepth"].(float64); ok {
			p.MaxDepth = int(d)
		}
		p.OnlyVisible, _ = args["onlyVisible"].(bool)
		var shown *mapping
		if !r.task.TextOnly {
			shown = &m
		}
		return r.readTree(ctx, p, shown)
	}
	for _, pair := range pointArgs[call.Name] {
		x, xok := args[pair[0]].(float64)
		y, yok := args[pair[1]].(float64)
		if !xok || !yok {
			return "", fmt.Errorf("%s needs numbers %s and %s", call.Name, pair[0], pair[1])
		}
		// A point off the screenshot is refused, not moved to the edge
		// (where close buttons sit).
		if !m.onShot(x, y) {
			return "", fmt.Errorf("%s: (%s, %s) = (%g, %g) is off the screen: the screenshot is %dx%d pixels, x from 0 to %d and y from 0 to %d",
				call.Name, pair[0], pair[1], x, y, m.shotW, m.shotH, m.shotW-1, m.shotH-1)
		}
		args[pair[0]], args[pair[1]] = m.toGuest(x, y)
	}
	if call.Name == protocol.MethodRunShell {
		r.withEnv(args)
		defer r.watchShell(step)()
	}
	var result json.RawMessage
	if err := r.cfg.Guest.Call(ctx, call.Name, args, &result); err != nil {
		return "", err
	}

	if string(result) == "{}" || len(result) == 0 {
		return "Done.", nil
	}
	return string(result), nil
}

// TakenOver reports whether the user drives the VM (after TakeOver, until
// Resume).
func (r *Runner) TakenOver() bool {
	_, taken, _, _, _ := r.ctl.snapshot()
	return taken
}
