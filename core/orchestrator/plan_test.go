package orchestrator

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// countingPool counts the VMs the orchestrator asks for, per task: a task
// that only plans must never take one.
type countingPool struct {
	*pool.Pool
	mu    sync.Mutex
	asked map[string]int
	n     atomic.Int32
}

func (p *countingPool) Acquire(ctx context.Context, req pool.Request) (*pool.Lease, error) {
	p.mu.Lock()
	p.asked[req.TaskID]++
	p.mu.Unlock()
	p.n.Add(1)
	return p.Pool.Acquire(ctx, req)
}

func (p *countingPool) askedFor(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked[id]
}

// env is an orchestrator on a real store and a pool of fake VMs, with the
// scripted provider as the default.
type env struct {
	t    *testing.T
	home string
	o    *Orchestrator
	st   *store.Store
	pool *countingPool
	llm  *llmtest.Server
	// halt stops the orchestrator (as a helper stop does) and the pool;
	// the store stays open.
	halt func()
}

// close halts and closes the store.
func (e *env) close() {
	e.halt()
	e.st.Close()
}

func newEnv(t *testing.T, home string, llm *llmtest.Server, recover bool) *env {
	t.Helper()
	return newEnvWith(t, home, llm, recover, nil)
}

// newEnvWith is newEnv with Settings as tune leaves them (nil: the
// defaults: one VM at once, none warm).
func newEnvWith(t *testing.T, home string, llm *llmtest.Server, recover bool, tune func(*config.Settings)) *env {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	paths := config.Paths{Home: home}
	if err := paths.Ensure(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, paths.Database(), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveTemplate(ctx, store.Template{ID: "host", Name: "Host desktop", OS: "linux", Kind: string(vm.KindHost),
		IsDefault: true, Status: store.TemplateReady}); err != nil {
		t.Fatal(err)
	}
	if ps, _ := st.ListProviders(ctx); len(ps) == 0 {
		if err := st.CreateProvider(ctx, &store.Provider{DisplayName: "Scripted", BaseURL: llm.URL, IsDefault: true, DefaultModelID: "scripted"}); err != nil {
			t.Fatal(err)
		}
	}
	settings := config.Defaults("linux", home)
	settings.MaxConcurrentVMs, settings.WarmPoolSize = 1, 0
	settings.OutputDirectory = filepath.Join(home, "out")
	if tune != nil {
		tune(&settings)
	}
	lim := func() pool.Limits {
		return pool.Limits{MaxConcurrent: 1, IdleTimeout: time.Hour, CPUs: 1, MemoryMB: 1024}
	}
	p, err := pool.New(pool.Config{Backend: fake.New(fake.Options{}), Dir: paths.VMs(), Limits: lim, Log: log, HostMemoryMB: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	cp := &countingPool{Pool: p, asked: map[string]int{}}
	o, err := New(Config{Store: st, Pool: cp, Paths: paths, Settings: func() config.Settings { return settings },
		APIKey: func(store.Provider) (string, error) { return "sk-test", nil }, Log: log, LLMBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if recover {
		if _, err := o.Recover(ctx); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	poolDone, orchDone := make(chan struct{}), make(chan struct{})
	go func() { p.Run(runCtx); close(poolDone) }()
	go func() { o.Run(runCtx); close(orchDone) }()
	var once sync.Once
	e := &env{t: t, home: home, o: o, st: st, pool: cp, llm: llm}
	e.halt = func() {
		once.Do(func() {
			cancel()
			<-orchDone
			<-poolDone
			p.Close(context.Background())
		})
	}
	t.Cleanup(e.close)
	return e
}

func startEnv(t *testing.T) *env {
	t.Helper()
	home, err := os.MkdirTemp("", "hcplan")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	return newEnv(t, home, llmtest.New(t), false)
}

func (e *env) submit(desc string, planFirst bool) store.Task {
	e.t.Helper()
	task, err := e.o.Submit(context.Background(), wire.CreateTask{Description: desc, PlanFirst: planFirst}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return task
}

// wait polls a task until ok says so.
func (e *env) wait(id, what string, ok func(store.Task) bool) store.Task {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		task, err := e.st.GetTask(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		if ok(task) {
			return task
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; task is %s (%s)", what, task.Status, task.StatusReason)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) waitStatus(id string, s store.TaskStatus) store.Task {
	e.t.Helper()
	return e.wait(id, string(s), func(t store.Task) bool { return t.Status == s })
}

// statuses returns the statuses of a task's status_change events, and
// fails the test on an llm_request event (not one of the API's types).
func (e *env) statuses(id string) []string {
	e.t.Helper()
	evs, err := e.st.ListEvents(context.Background(), id, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Type == "llm_request" {
			e.t.Fatalf("event %d is llm_request: %q", ev.Seq, ev.Summary)
		}
		if ev.Type == "status_change" {
			out = append(out, ev.Status)
		}
	}
	return out
}

func (e *env) events(id string) []store.Event {
	e.t.Helper()
	evs, err := e.st.ListEvents(context.Background(), id, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func conflict(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("%s: %v; want a conflict", what, err)
	}
}

// TestPlanApprove: queued -> planning -> planReview (no VM asked for, the
// other actions refused) -> approved -> queued -> runs with the plan.
func TestPlanApprove(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	hold := make(chan struct{})
	held := llmtest.Text("1. Open the file.\n2. Save it.")
	held.Hold = hold
	e.llm.Script("[[approve]]", held, llmtest.Text("Done."), llmtest.Verdict(true, "Followed the plan."))
	task := e.submit("Plan it [[approve]]", true)

	planning := e.waitStatus(task.ID, store.StatusPlanning)
	if planning.StatusReason != reasonPlanning || planning.PlanMarkdown != "" {
		t.Fatalf("planning: reason %q, plan %q", planning.StatusReason, planning.PlanMarkdown)
	}
	conflict(t, "approve while planning", e.o.Plan(ctx, task.ID, wire.ActionApprovePlan, ""))
	conflict(t, "edit while planning", e.o.Plan(ctx, task.ID, wire.ActionEditPlan, "1. x"))
	close(hold)

	review := e.waitStatus(task.ID, store.StatusPlanReview)
	if review.PlanMarkdown != "1. Open the file.\n2. Save it." || review.StatusReason != "waiting for plan approval" {
		t.Fatalf("review: plan %q, reason %q", review.PlanMarkdown, review.StatusReason)
	}
	if n := e.pool.askedFor(task.ID); n != 0 {
		t.Fatalf("a task under plan review asked for %d VMs", n)
	}
	conflict(t, "pause under review", e.o.Pause(ctx, task.ID))
	err := e.o.Resume(ctx, task.ID, "", Budget{})
	conflict(t, "resume under review", err)
	if !strings.Contains(err.Error(), "plan waits for review") {
		t.Fatalf("resume under review says %q", err)
	}

	if err := e.o.Plan(ctx, task.ID, wire.ActionApprovePlan, ""); err != nil {
		t.Fatal(err)
	}
	done := e.wait(task.ID, "the end", func(t store.Task) bool { return t.Status.Terminal() })
	if done.Status != store.StatusCompleted || done.PlanMarkdown != "1. Open the file.\n2. Save it." {
		t.Fatalf("ended %s (%v) with plan %q", done.Status, done.ResultSummary, done.PlanMarkdown)
	}
	if r := e.llm.Requests("[[approve]]"); len(r) < 2 || !strings.Contains(r[1], "Follow this plan") || !strings.Contains(r[1], "2. Save it.") {
		t.Fatal("the approved plan did not reach the agent")
	}
	want := "queued planning planReview queued waitingForVM running completed"
	if got := strings.Join(e.statuses(task.ID), " "); got != want {
		t.Fatalf("status changes %q; want %q", got, want)
	}
	conflict(t, "approve after the end", e.o.Plan(ctx, task.ID, wire.ActionApprovePlan, ""))
	conflict(t, "cancel_plan after the end", e.o.Plan(ctx, task.ID, wire.ActionCancelPlan, ""))
	if err := e.o.Plan(ctx, task.ID, "approve", ""); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("unknown plan action: %v", err)
	}
}

// TestPlanEditStartsRun: edit_plan replaces the plan and starts the run in
// one step (it used to wait for an approval again); a blank edit keeps the
// model's plan and starts too, as Swift's server does.
func TestPlanEditStartsRun(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	e.llm.Script("[[edit]]", llmtest.Text("1. Open the file.\n2. Save it."), llmtest.Text("Done."), llmtest.Verdict(true, "Followed the edited plan."))
	task := e.submit("Plan it [[edit]]", true)
	e.waitStatus(task.ID, store.StatusPlanReview)
	if err := e.o.Plan(ctx, task.ID, wire.ActionEditPlan, "1. Only save it.\x1b[2J\n"); err != nil {
		t.Fatal(err)
	}
	done := e.wait(task.ID, "the end", func(t store.Task) bool { return t.Status.Terminal() })
	const edited = `1. Only save it.\x1b[2J` // the escape byte is shown, not sent to a terminal
	if done.Status != store.StatusCompleted || done.PlanMarkdown != edited {
		t.Fatalf("ended %s with plan %q", done.Status, done.PlanMarkdown)
	}
	r := e.llm.Requests("[[edit]]")
	if len(r) < 2 || !strings.Contains(r[1], "1. Only save it.") || strings.Contains(r[1], "Open the file") {
		t.Fatal("the edited plan did not replace the model's")
	}
	var edit *store.Event
	for _, ev := range e.events(task.ID) {
		if ev.ActivityType == "user_answer" {
			edit = &ev
		}
	}
	if edit == nil || edit.Type != "status_change" || edit.Status != "queued" || edit.Details != edited {
		t.Fatalf("the edit's event: %+v", edit)
	}
	e.statuses(task.ID) // no llm_request

	e.llm.Script("[[blank]]", llmtest.Text("1. Say hello."), llmtest.Text("Hello."), llmtest.Verdict(true, "Said hello."))
	task = e.submit("Plan it [[blank]]", true)
	e.waitStatus(task.ID, store.StatusPlanReview)
	if err := e.o.Plan(ctx, task.ID, wire.ActionEditPlan, "  \n"); err != nil {
		t.Fatal(err)
	}
	done = e.wait(task.ID, "the end", func(t store.Task) bool { return t.Status.Terminal() })
	if done.Status != store.StatusCompleted || done.PlanMarkdown != "1. Say hello." {
		t.Fatalf("blank edit: ended %s with plan %q", done.Status, done.PlanMarkdown)
	}
}

// TestPlanFailed: a model that answers the plan request with a tool call,
// with nothing, or with an error ends the task planFailed with the reason,
// and the task never asks for a VM.
func TestPlanFailed(t *testing.T) {
	e := startEnv(t)
	for marker, c := range map[string]struct {
		turn llmtest.Turn
		want string
	}{
		"[[tool]]":  {llmtest.Tool("click", map[string]any{"x": 1, "y": 2}), "tool call (click) instead of a plan"},
		"[[empty]]": {llmtest.Text("  \n "), "empty plan"},
		"[[error]]": {llmtest.Status(400), "Could not make a plan"},
	} {
		e.llm.Script(marker, c.turn)
		task := e.submit("Plan it "+marker, true)
		done := e.wait(task.ID, "the end", func(t store.Task) bool { return t.Status.Terminal() })
		if done.Status != store.StatusPlanFailed || done.ResultSummary == nil || !strings.Contains(*done.ResultSummary, c.want) {
			t.Errorf("%s: ended %s (%v); want planFailed saying %q", marker, done.Status, done.ResultSummary, c.want)
		}
		if done.WasSuccessful == nil || *done.WasSuccessful || done.CompletedAt == nil {
			t.Errorf("%s: planFailed must be an unsuccessful end", marker)
		}
		if got := strings.Join(e.statuses(task.ID), " "); got != "queued planning planFailed" {
			t.Errorf("%s: status changes %q", marker, got)
		}
		conflict(t, marker+": approve a failed plan", e.o.Plan(context.Background(), task.ID, wire.ActionApprovePlan, ""))
	}
	if n := e.pool.n.Load(); n != 0 {
		t.Fatalf("tasks whose plan failed asked for %d VMs", n)
	}
}

// TestPlanCancel: cancel_plan during planning interrupts the model call
// (the provider holds its answer forever); cancel_plan and cancel under
// review end the task cancelled; the kill switch cancels both states.
func TestPlanCancel(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	forever := make(chan struct{})
	defer close(forever)
	held := llmtest.Text("never sent")
	held.Hold = forever
	e.llm.Script("[[held]]", held)
	task := e.submit("Plan it [[held]]", true)
	e.waitStatus(task.ID, store.StatusPlanning)
	start := time.Now()
	// A cancel that did not interrupt the held model call would wait
	// forever: it gets 5 s.
	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := e.o.Plan(bounded, task.ID, wire.ActionCancelPlan, ""); err != nil {
		t.Fatal(err)
	}
	got, _ := e.st.GetTask(ctx, task.ID)
	if got.Status != store.StatusCancelled || *got.ResultSummary != "Planning cancelled by the user." || time.Since(start) > 5*time.Second {
		t.Fatalf("cancel during planning: %s (%v) after %s", got.Status, got.ResultSummary, time.Since(start))
	}

	e.llm.Script("[[review]]", llmtest.Text("1. Plan."))
	task = e.submit("Plan it [[review]]", true)
	e.waitStatus(task.ID, store.StatusPlanReview)
	if err := e.o.Plan(ctx, task.ID, wire.ActionCancelPlan, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.st.GetTask(ctx, task.ID); got.Status != store.StatusCancelled {
		t.Fatalf("cancel_plan under review: %s", got.Status)
	}
	conflict(t, "cancel_plan twice", e.o.Plan(ctx, task.ID, wire.ActionCancelPlan, ""))

	e.llm.Script("[[cancel]]", llmtest.Text("1. Plan."))
	task = e.submit("Plan it [[cancel]]", true)
	e.waitStatus(task.ID, store.StatusPlanReview)
	if err := e.o.Cancel(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.st.GetTask(ctx, task.ID); got.Status != store.StatusCancelled {
		t.Fatalf("cancel under review: %s", got.Status)
	}

	e.llm.Script("[[kill]]", llmtest.Text("1. Plan."))
	review := e.submit("Plan it [[kill]]", true)
	e.waitStatus(review.ID, store.StatusPlanReview)
	e.llm.Script("[[held2]]", held)
	planning := e.submit("Plan it [[held2]]", true)
	e.waitStatus(planning.ID, store.StatusPlanning)
	stopped, err := e.o.StopAll(ctx)
	if err != nil || len(stopped) != 2 {
		t.Fatalf("kill switch stopped %v, %v", stopped, err)
	}
	for _, id := range []string{review.ID, planning.ID} {
		if got, _ := e.st.GetTask(ctx, id); got.Status != store.StatusCancelled {
			t.Fatalf("after the kill switch %s is %s (%v)", id, got.Status, *got.ResultSummary)
		}
	}
	if n := e.pool.n.Load(); n != 0 {
		t.Fatalf("cancelled plans asked for %d VMs", n)
	}
}

// TestPlanTakesNoSlot: with one VM slot held by a running agent, a
// plan-first task is still planned and reviewed; approved, it waits for the
// slot like any queued task.
func TestPlanTakesNoSlot(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	busy := llmtest.Text("Working.")
	busy.Hold = release
	e.llm.Script("[[busy]]", busy, llmtest.Verdict(true, "Done."))
	first := e.submit("Hold the slot [[busy]]", false)
	e.waitStatus(first.ID, store.StatusRunning)

	e.llm.Script("[[slot]]", llmtest.Text("1. Plan."), llmtest.Text("Done."), llmtest.Verdict(true, "Done."))
	task := e.submit("Plan it [[slot]]", true)
	e.waitStatus(task.ID, store.StatusPlanReview)
	if err := e.o.Plan(ctx, task.ID, wire.ActionApprovePlan, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if got, _ := e.st.GetTask(ctx, task.ID); got.Status != store.StatusQueued {
		t.Fatalf("approved with no free slot: %s; want queued", got.Status)
	}
	close(release)
	if done := e.wait(task.ID, "the end", func(t store.Task) bool { return t.Status.Terminal() }); done.Status != store.StatusCompleted {
		t.Fatalf("ended %s", done.Status)
	}
}

// TestPlanRecover: after a crash, a plan under review still waits (and can
// be approved), and a task that was planning is planned again.
func TestPlanRecover(t *testing.T) {
	home, err := os.MkdirTemp("", "hcplan")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(home)
	llm := llmtest.New(t)
	e := newEnv(t, home, llm, false)
	ctx := context.Background()
	llm.Script("[[kept]]", llmtest.Text("1. Kept plan."), llmtest.Text("Done."), llmtest.Verdict(true, "Done."))
	kept := e.submit("Plan it [[kept]]", true)
	e.waitStatus(kept.ID, store.StatusPlanReview)
	forever := make(chan struct{})
	defer close(forever)
	held := llmtest.Text("never sent")
	held.Hold = forever
	llm.Script("[[again]]", held, llmtest.Text("1. Second plan."))
	again := e.submit("Plan it [[again]]", true)
	e.waitStatus(again.ID, store.StatusPlanning)
	for deadline := time.Now().Add(10 * time.Second); len(llm.Requests("[[again]]")) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the plan request never reached the provider")
		}
	}
	// A crash: the store says planning, and no run is behind it.
	e.close()
	st, err := store.Open(ctx, config.Paths{Home: home}.Database(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.UpdateTask(ctx, again.ID, store.Update{Mutate: func(t *store.Task) error { t.Status = store.StatusPlanning; return nil }}); err != nil {
		t.Fatal(err)
	}
	// What an older helper left: a plan waiting as a paused task, and an
	// agent paused in its session.
	legacy := &store.Task{Description: "Plan it [[legacy]]", ProviderName: "Scripted", ModelID: "scripted", PlanFirst: true}
	paused := &store.Task{Description: "A paused agent", ProviderName: "Scripted", ModelID: "scripted", PlanFirst: true}
	for _, task := range []*store.Task{legacy, paused} {
		if err := st.CreateTask(ctx, task, nil); err != nil {
			t.Fatal(err)
		}
		session := ""
		if task == paused {
			session = "s1"
		}
		if _, _, err := st.UpdateTask(ctx, task.ID, store.Update{Mutate: func(t *store.Task) error {
			t.Status, t.StatusReason, t.PlanMarkdown, t.SessionID = store.StatusPaused, "waiting for plan approval", "1. Old plan.", session
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	// The older helper's session holds its conversation as chat messages,
	// which this helper cannot go on from.
	sessionDir := config.Paths{Home: home}.Session("s1")
	if err := os.MkdirAll(sessionDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sessionDir, trace.ConversationFile), []byte(`{"role":"user","content":"Task: x"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	e = newEnv(t, home, llm, true)
	e.waitStatus(kept.ID, store.StatusPlanReview)
	if got := e.waitStatus(legacy.ID, store.StatusPlanReview); got.PlanMarkdown != "1. Old plan." {
		t.Fatalf("legacy plan after the restart: %q", got.PlanMarkdown)
	}
	if got := e.waitStatus(paused.ID, store.StatusFailed); *got.ResultSummary != "helper restarted" {
		t.Fatalf("paused agent after the restart: %v", got.ResultSummary)
	}
	if got := e.waitStatus(again.ID, store.StatusPlanReview); got.PlanMarkdown != "1. Second plan." {
		t.Fatalf("plan after the restart: %q", got.PlanMarkdown)
	}
	if err := e.o.Plan(ctx, kept.ID, wire.ActionApprovePlan, ""); err != nil {
		t.Fatal(err)
	}
	if done := e.wait(kept.ID, "the end", func(t store.Task) bool { return t.Status.Terminal() }); done.Status != store.StatusCompleted {
		t.Fatalf("kept plan ended %s", done.Status)
	}
}

// TestPlanShutdown: a helper that stops while a plan is written queues the
// task to be planned again rather than failing it.
func TestPlanShutdown(t *testing.T) {
	e := startEnv(t)
	forever := make(chan struct{})
	defer close(forever)
	held := llmtest.Text("never sent")
	held.Hold = forever
	e.llm.Script("[[stop]]", held)
	task := e.submit("Plan it [[stop]]", true)
	e.waitStatus(task.ID, store.StatusPlanning)
	e.halt()
	got, err := e.st.GetTask(context.Background(), task.ID)
	if err != nil || got.Status != store.StatusQueued || !strings.Contains(got.StatusReason, "written again") || got.CompletedAt != nil {
		t.Fatalf("after a stop while planning: %s (%q), %v", got.Status, got.StatusReason, err)
	}
}
