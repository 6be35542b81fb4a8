package mcpserve

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/wire"
)

// wait follows task id until it settles (see settled), d passes or ctx
// ends, and returns its last state; d <= 0 looks once. The task's own
// state is looked at every Poll rather than its event stream followed:
// an agent logs its question before the question is pending, so only the
// task says when a question waits for an answer. onChange, if set, hears
// of each new status or step.
func (s *server) wait(ctx context.Context, h Helper, id string, d time.Duration, onChange func(wire.Task)) (wire.Task, error) {
	t, err := h.Task(ctx, id)
	if err != nil || d <= 0 {
		return t, err
	}
	from := t.Status
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	for !settled(t, from) {
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-deadline.C:
			return t, nil
		case <-tick.C:
		}
		now, err := h.Task(ctx, id)
		if err != nil {
			return t, err
		}
		if onChange != nil && (now.Status != t.Status || steps(now) != steps(t)) {
			onChange(now)
		}
		t = now
	}
	return t, nil
}

func steps(t wire.Task) int {
	if t.StepCount == nil {
		return 0
	}
	return *t.StepCount
}

// seconds is a wait in seconds as a duration, within MaxWait.
func seconds(n int) time.Duration { return time.Duration(min(max(n, 0), MaxWait)) * time.Second }

// progress returns what tells the caller of a waiting call how its task
// goes, when the call asked for progress (nil otherwise).
func progress(ctx context.Context, req *mcp.CallToolRequest) func(wire.Task) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	n := 0
	return func(t wire.Task) {
		n++
		msg := t.Status
		if s := steps(t); s > 0 {
			msg = fmt.Sprintf("%s, step %d", t.Status, s)
		}
		// A caller that stopped listening changes nothing here.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
	}
}
