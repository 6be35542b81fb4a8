package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Errors a run ends with.
var (
	errCancelled = errors.New("cancelled by the user")
	errTimedOut  = errors.New("the task's time limit passed")
)

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
	res.Summary = r.filter(res.Summary)
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

// The loop. The conversation is provider-neutral (llm.Message): the task
// first, then for each step a user message (the results of the last
// step's tool calls, notes, and the screen) and the model's answer. A
// model with its own computer tool (Claude's, OpenAI's computer-use
// model) sees the screen in the result of its last computer action, as
// its tool returns it, and acts through that tool (native.go); any other
// sees it as an image of the user message and acts through function
// tools. The conversation is kept in the session as it grows
// (conversation.go), so that a task the helper stopped under resumes with
// it.

// setup prepares what every request of the run carries: the system
// prompt, the tools, and the display a native computer tool is told of.
func (r *Runner) setup() {
	if r.task.Host {
		r.setupHost()
		return
	}
	hello := r.cfg.Guest.Hello()
	var creds []CredentialInfo
	if r.cfg.Vault != nil {
		all := r.cfg.Vault.Credentials()
		r.knowCredentials(all)
		if r.task.Policy.For(config.UseCredential) != config.Deny {
			creds = all
		}
	}
	native := r.cfg.LLM.Native() != "" && !r.task.TextOnly
	if native {
		d := llm.DisplayFor(hello.Screen.Width, hello.Screen.Height)
		d.OS = hello.OS
		r.display = &d
	}
	r.system = systemPrompt(promptInfo{
		GuestOS: hello.OS, OSVersion: hello.OSVersion, SharedPath: hello.SharedPath, Network: string(r.task.Network),
		Policy: r.task.Policy, Date: r.cfg.Now(), ScreenW: hello.Screen.Width, ScreenH: hello.Screen.Height,
		MaxSteps: r.task.MaxIterations, TimeoutMins: int(r.task.Timeout.Minutes()), TextOnly: r.task.TextOnly,
		Credentials: credentialNames(creds), Extra: append(slices.Clone(r.cfg.Prompt), todoPrompt), Native: native,
	})
	denied := func(tool string) bool { return r.task.Policy.For(tool) == config.Deny }
	defs := tools(denied, r.task.TextOnly, native)
	hosted, problems := prepareHostTools(r.cfg.HostTools)
	r.hostTools = hosted
	for _, p := range problems {
		r.emit(0, Event{Type: "status_change", ActivityType: "info", Summary: p})
	}
	defs = append(defs, r.hostToolDefs()...)
	if len(creds) == 0 {
		// Nothing stored, nothing to type: the tool is not offered.
		defs = slices.DeleteFunc(defs, func(t llm.Tool) bool { return t.Name == config.UseCredential })
	}
	r.toolDefs = defs
	r.offered = make(map[string]bool, len(defs))
	for _, d := range defs {
		r.offered[d.Name] = true
	}
	r.toolTokens = toolsTokens(defs) + len(r.system)/4
}

// unstep takes back the step just counted: it is taken again.
func (r *Runner) unstep() {
	r.mu.Lock()
	r.steps--
	r.mu.Unlock()
}

// maxLostLooks is how many times in a row a step's observation is taken
// again after the guest's connection dropped and came back.
const maxLostLooks = 3

func (r *Runner) loop(ctx context.Context) Result {
	r.setup()
	if len(r.msgs) == 0 {
		first := "Task: " + r.task.Description
		if r.cfg.Context != "" {
			first = r.cfg.Context + "\n\n" + first
		}
		if todo := r.Todo(); len(todo) > 0 {
			first += "\n\nYour checklist, from the approved plan (tick off each item with the todo tool, action complete, as you finish it):\n" + checklist(todo)
		}
		r.msgs = []llm.Message{llm.UserText(first)}
	}
	failedChecks, lostLooks := 0, 0
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
				r.unstep()
				if err := r.holdForGuest(ctx, err); err != nil {
					return ended(ctx)
				}
				continue
			}
			if errors.Is(err, errdefs.ErrUnavailable) && lostLooks < maxLostLooks {
				// The guest's connection dropped and is back (guestGone
				// waited for it): the step is taken again.
				lostLooks++
				r.unstep()
				continue
			}
			return Result{Status: store.StatusFailed, Summary: "The VM could not be observed: " + err.Error()}
		}
		lostLooks = 0
		r.addObservation(obs)
		r.save()
		llm.ForgetOldImages(r.msgs, r.task.KeepImages)

		// Fit the model's context window.
		if why := r.tooLong(); why != "" {
			if err := r.condense(ctx, step, why, true); err != nil {
				if ctx.Err() != nil {
					return ended(ctx)
				}
				r.cfg.Log.Warn("history not condensed", "err", err)
			}
		}

		// Decide.
		reply, err := r.decide(ctx, step)
		if err != nil {
			return r.failed(ctx, err)
		}
		r.msgs = append(r.msgs, reply.Message)
		r.save()

		// A turn without tool calls: is the task done? Not while its
		// subagents work: their results come first.
		if len(reply.ToolCalls) == 0 && r.waitForChildren(ctx, step) {
			if ctx.Err() != nil {
				return ended(ctx)
			}
			continue
		}
		if len(reply.ToolCalls) == 0 {
			verdict, err := r.check(ctx, step)
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
			r.msgs = append(r.msgs, llm.UserText("The completion check says the task is not done yet: "+verdict.Summary+"\nContinue, or if it cannot be done, say why without calling a tool."))
			continue
		}
		failedChecks = 0

		// Act, in order. The results are the next user message, which the
		// next step's screen joins.
		results := llm.UserMessage()
		r.shown = nil
		for i, call := range reply.ToolCalls {
			if r.ctl.isPaused() {
				// The user paused or took over: the remaining calls are not made.
				for _, rest := range reply.ToolCalls[i:] {
					results.Content = append(results.Content, llm.ResultBlock(rest, "Not done: the user paused the agent before this action.", true))
				}
				break
			}
			o := r.act(ctx, step, call, mapping)
			if ctx.Err() != nil {
				return ended(ctx)
			}
			res := &llm.ToolResult{CallID: call.ID, Native: call.Native, IsError: o.isError, Acknowledged: o.acked}
			if o.text != "" {
				res.Content = append(res.Content, llm.Text(o.text))
			}
			if o.image != nil {
				res.Content = append(res.Content, llm.ImageBlock(o.image))
			}
			results.Content = append(results.Content, llm.Block{Type: llm.BlockToolResult, Result: res})
			if call.Native != "" && o.ran && o.image == nil {
				// The screen after the turn shows in the last native
				// action's result that ran.
				r.shown = res
			}
		}
		r.msgs = append(r.msgs, results)
		if err := r.cfg.Trace.SyncSoon(); err != nil {
			r.traceFailed(err)
		}
	}
}

// observation is what a step shows the model: words, and the screen.
type observation struct {
	text  string
	image *llm.Image
}

// addObservation adds a step's observation to the conversation: to the
// user message holding the last turn's results (its image in the last
// native result that ran, as a computer tool returns it), else as a user
// message of its own.
func (r *Runner) addObservation(o observation) {
	n := len(r.msgs)
	last := &r.msgs[n-1]
	joins := last.Role == llm.RoleUser && n > 1 && r.msgs[n-2].Role == llm.RoleAssistant && len(r.msgs[n-2].Calls()) > 0
	if !joins {
		r.msgs = append(r.msgs, llm.UserMessage())
		last = &r.msgs[len(r.msgs)-1]
	}
	last.Content = append(last.Content, llm.Text(o.text))
	if o.image == nil {
		return
	}
	if joins && r.shown != nil {
		r.shown.Content = append(r.shown.Content, llm.ImageBlock(o.image))
	} else {
		last.Content = append(last.Content, llm.ImageBlock(o.image))
	}
	r.shown = nil
}

// observe takes a screenshot and returns what this turn shows the model
// (with any instructions the user added) and the coordinate mapping.
func (r *Runner) observe(ctx context.Context, step int) (_ observation, _ mapping, err error) {
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
	if r.task.Host {
		// No screen: the step's words are the notes and results alone.
		return r.withNotes(step, observation{text: fmt.Sprintf("Step %d of at most %d.", step, r.task.MaxIterations)}, notes), mapping{}, nil
	}
	img, m, err := r.screen(ctx, step)
	if err != nil {
		return observation{}, mapping{}, err
	}
	o := observation{text: fmt.Sprintf("Step %d. The screen now (%dx%d pixels):", step, m.shotW, m.shotH)}
	if r.task.TextOnly {
		// The screenshot is for the user and the trace; the model reads.
		view, err := r.screenText(ctx)
		if err != nil {
			return observation{}, mapping{}, err
		}
		o.text = fmt.Sprintf("Step %d. The screen now, as text (you get no screenshots: act on elements by their ids, and with the keyboard):\n%s", step, r.redactor.Redact(view))
	} else {
		o.image = img
	}
	return r.withNotes(step, o, notes), m, nil
}

// withNotes puts before a step's observation what came in since the last
// turn: Hivecrew's notes, subagents' results and messages, the user's
// instructions.
func (r *Runner) withNotes(step int, o observation, notes []string) observation {
	if len(notes) > 0 {
		o.text = "Note from Hivecrew: " + strings.Join(notes, "\n") + "\n\n" + o.text
	}
	if reps := r.ctl.takeReports(); len(reps) > 0 {
		o.text = strings.Join(reps, "\n\n") + "\n\n" + o.text
	}
	if ins := r.ctl.takeInstructions(); len(ins) > 0 {
		o.text = "New instructions from the user: " + strings.Join(ins, "\n") + "\n\n" + o.text
		r.emit(step, Event{Type: "status_change", ActivityType: "user_answer", Summary: "Instructions from the user: " + strings.Join(ins, " / ")})
	}
	return o
}

// screen takes a screenshot, records it, and returns it as the model is
// shown it: at the declared display's size for a native computer tool
// (whose points are then the display's), else within the task's cap.
func (r *Runner) screen(ctx context.Context, step int) (*llm.Image, mapping, error) {
	maxW, maxH := r.task.ShotW, r.task.ShotH
	if r.display != nil {
		maxW, maxH = r.display.Width, r.display.Height
	}
	shot, err := r.cfg.Guest.Screenshot(ctx, protocol.ScreenshotParams{Format: protocol.FormatPNG, MaxWidth: maxW, MaxHeight: maxH})
	if err != nil {
		return nil, mapping{}, err
	}
	scr := r.cfg.Guest.Hello().Screen
	rel, err := r.cfg.Trace.Screenshot(shot.Format, shot.Data)
	if err != nil {
		r.traceFailed(err)
	}
	r.emit(step, Event{Type: "screenshot", ActivityType: "observation", Summary: fmt.Sprintf("Screenshot %dx%d", shot.Width, shot.Height), Screenshot: rel})
	m := mapping{shotW: shot.Width, shotH: shot.Height, screenW: scr.Width, screenH: scr.Height}
	if r.task.TextOnly {
		return nil, m, nil
	}
	var img *llm.Image
	if d := r.display; d != nil && (shot.Width != d.Width || shot.Height != d.Height) {
		img, err = llm.ResizedImage(shot.Data, imageRect(shot.Width, shot.Height), d.Width, d.Height)
	} else {
		img, err = llm.NewImage(shot.Format, shot.Data, maxW, maxH)
	}
	if err != nil {
		return nil, mapping{}, err
	}
	img.File = rel
	m.shotW, m.shotH = img.Width, img.Height
	return img, m, nil
}

// decide asks the model and returns its reply (after condensing the
// history, if the provider said the prompt was too long: that is done
// once a step, then the same request is sent again). When the provider
// keeps failing, the task pauses with the error and the same turn is
// retried after the user resumes.
func (r *Runner) decide(ctx context.Context, step int) (llm.Reply, error) {
	condensed := false
	for {
		if err := r.withinBudget(ctx); err != nil {
			return llm.Reply{}, err
		}
		var onDelta func(llm.Delta)
		if r.cfg.Live != nil {
			onDelta = func(d llm.Delta) {
				r.cfg.Live(Live{Step: step, Restart: d.Restart, Text: d.Text, Reasoning: d.Reasoning})
			}
		}
		req := r.request(llm.Window(r.msgs, r.task.KeepImages))
		req.ImagesDropNext = llm.WindowDropsNext(r.msgs, r.task.KeepImages)
		reply, err := r.cfg.LLM.CompleteStream(ctx, req, onDelta)
		if err != nil && llm.IsContextOverflow(err) && !condensed && ctx.Err() == nil {
			condensed = true
			if r.condense(ctx, step, "the provider refused the prompt as too long: "+err.Error(), false) == nil {
				continue
			}
		}
		if err == nil {
			r.addUsage(reply.Usage)
			names := make([]string, len(reply.ToolCalls))
			for i, c := range reply.ToolCalls {
				names[i] = c.Name
				if c.Native != "" {
					names[i] = describeNative(c)
				}
			}
			summary := reply.Text
			if summary == "" {
				summary = "Calls " + strings.Join(names, ", ")
			}
			r.emit(step, Event{Type: "llm_response", ActivityType: "llm_response", Summary: summary, Reasoning: reply.Text,
				Details: truncate(reply.Reasoning, 8000), Usage: reply.Usage})
			return reply, nil
		}
		if err := r.pauseForLLM(ctx, step, err); err != nil {
			return llm.Reply{}, err
		}
	}
}

// request is a request of the run's conversation: its system prompt,
// tools and display.
func (r *Runner) request(msgs []llm.Message) llm.Request {
	return llm.Request{System: r.system, Messages: msgs, Tools: r.toolDefs, Computer: r.display}
}

// check runs the structured completion check.
func (r *Runner) check(ctx context.Context, step int) (llm.Verdict, error) {
	judge := "Judge by the latest screen and the steps taken."
	if r.task.Host {
		judge = "Judge by the steps taken and what was found; the summary is the result your parent task gets, so give the findings themselves."
	}
	ask := append(llm.Compact(r.msgs, 1), llm.UserText("Was the task fully accomplished? "+judge+" Answer with success and a one-paragraph summary of the result."))
	for {
		if err := r.withinBudget(ctx); err != nil {
			return llm.Verdict{}, err
		}
		v, u, err := r.cfg.LLM.Verify(ctx, r.request(ask))
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

var errNothingToCondense = errors.New("the history is too short to condense")
