package orchestrator

import "github.com/hivecrew/hivecrew/core/store"

// NoticeEvent names what a Notice tells.
type NoticeEvent string

// Notice events (the webhooks' event names).
const (
	// NoticeEnded: the task reached a terminal status.
	NoticeEnded NoticeEvent = "task.ended"
	// NoticeQuestion: its agent asks the user a question.
	NoticeQuestion NoticeEvent = "task.question"
	// NoticePermission: its agent asks to use a tool.
	NoticePermission NoticeEvent = "task.permission"
	// NoticeReview: its changes to host folders wait for review.
	NoticeReview NoticeEvent = "task.review"
)

// Notice is a change the user may want to hear of at once, given to
// Config.Notify after it is stored.
type Notice struct {
	Event NoticeEvent
	Task  store.Task
	// Question is set for NoticeQuestion, Permission for NoticePermission.
	Question   *store.Question
	Permission *store.PermissionRequest
}

// notice gives n to Config.Notify, if set. Notify must not block.
func (o *Orchestrator) notice(n Notice) {
	if o.cfg.Notify != nil {
		o.cfg.Notify(n)
	}
}

// noticeEnd tells of a task that has just ended.
func (o *Orchestrator) noticeEnd(t store.Task) {
	o.notice(Notice{Event: NoticeEnded, Task: t})
	if t.Status == store.StatusWritebackReview {
		o.notice(Notice{Event: NoticeReview, Task: t})
	}
}

// noticeAsk tells of a question or permission request just stored.
func (o *Orchestrator) noticeAsk(taskID string, q *store.Question, p *store.PermissionRequest) {
	if o.cfg.Notify == nil {
		return
	}
	t, err := o.cfg.Store.GetTask(background(), taskID)
	if err != nil {
		o.cfg.Log.Warn("read the task of a notice", "task", taskID, "err", err)
		return
	}
	n := Notice{Event: NoticeQuestion, Task: t, Question: q}
	if p != nil {
		n = Notice{Event: NoticePermission, Task: t, Permission: p}
	}
	o.notice(n)
}
