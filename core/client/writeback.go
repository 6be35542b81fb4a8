package client

import (
	"context"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Writeback returns the review of a task's changes to its host folders,
// or nil when none waits.
func (c *Client) Writeback(ctx context.Context, id string) (*wire.WritebackReview, error) {
	return optional[wire.WritebackReview](ctx, c, "/api/v1/tasks/"+esc(id)+"/writeback")
}

// DecideWriteback approves (writes to the host) or discards a task's
// pending changes to its host folders: those of itemIDs, or all.
func (c *Client) DecideWriteback(ctx context.Context, id string, approve bool, itemIDs []string) (wire.Task, error) {
	a := wire.TaskAction{Action: wire.ActionDiscardWriteback, ItemIDs: itemIDs}
	if approve {
		a.Action = wire.ActionApproveWriteback
	}
	return c.TaskAction(ctx, id, a)
}
