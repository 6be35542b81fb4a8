package orchestrator

import (
	"errors"
	"path/filepath"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
)

// emitter turns the agent's events into stored activity events. The agent's
// terminal status is left out: finishTask writes it once the outputs are in.
func (o *Orchestrator) emitter(r *run, sid string, client *llm.Client) func(agent.Event) {
	return func(e agent.Event) {
		if e.Type == "status_change" && e.Status.Terminal() {
			return
		}
		ev := store.Event{Type: e.Type, Summary: e.Summary, ActivityType: e.ActivityType, Details: e.Details,
			Reasoning: e.Reasoning, Status: string(e.Status), Point: e.Point, SubagentID: e.Subagent}
		if e.Screenshot != "" {
			ev.ScreenshotPath = filepath.ToSlash(filepath.Join("Sessions", sid, e.Screenshot))
		}
		u := store.Update{Events: []store.Event{ev}}
		runner, _, _ := r.get()
		switch {
		case e.Type == "status_change" && runner != nil:
			status, reason := runner.Status()
			u.Mutate = func(t *store.Task) error {
				if t.Status.Terminal() {
					return errdefs.Conflictf("task %s has ended", t.ID)
				}
				t.Status, t.StatusReason = status, reason
				return nil
			}
		case e.Type == "llm_response" && runner != nil:
			r.live.clear()
			steps, usage := runner.Steps(), runner.Usage()
			cost, _ := client.Cost(usage)
			u.Mutate = func(t *store.Task) error {
				t.StepCount, t.PromptTokens, t.CompletionTokens = steps, int64(usage.Prompt)+t.TitlePromptTokens, int64(usage.Completion)+t.TitleCompletionTokens
				t.CostUSD = cost + t.TitleCostUSD
				return nil
			}
		}
		// Off the agent's path, in order with the task's other updates
		// (o.update flushes them first); recorded reports the outcome.
		o.rec.Record(r.id, u)
	}
}

// recorded is told the outcome of each update the recorder wrote: watchers
// are told of a task that changed, and a failure is logged (a conflict is
// a task that ended meanwhile, whose late news is dropped).
func (o *Orchestrator) recorded(id string, err error) {
	switch {
	case err == nil:
		o.hub.notify(id)
	case !errors.Is(err, errdefs.ErrConflict):
		o.cfg.Log.Error("record event", "task", id, "err", err)
	}
}

// changed persists new questions and permission requests and tells watchers.
func (o *Orchestrator) changed(r *run) func() {
	return func() {
		runner, _, _ := r.get()
		if runner != nil {
			q, p := runner.Pending()
			if q != nil && r.firstSave("q"+q.ID) {
				kind := "text"
				if len(q.Options) > 0 {
					kind = "multipleChoice"
				}
				sq := store.Question{ID: q.ID, TaskID: r.id, Kind: kind, Question: q.Text, Options: q.Options, CreatedAt: q.Created}
				if err := o.cfg.Store.SaveQuestion(background(), sq); err != nil {
					o.cfg.Log.Error("save question", "task", r.id, "err", err)
				} else {
					defer o.noticeAsk(r.id, &sq, nil)
				}
			}
			if p != nil && r.firstSave("p"+p.ID) {
				sp := store.PermissionRequest{ID: p.ID, TaskID: r.id, ToolName: p.Tool, Details: p.Details, CreatedAt: p.Created}
				if err := o.cfg.Store.SavePermission(background(), sp); err != nil {
					o.cfg.Log.Error("save permission request", "task", r.id, "err", err)
				} else {
					defer o.noticeAsk(r.id, nil, &sp)
				}
			}
		}
		o.hub.notify(r.id)
	}
}
