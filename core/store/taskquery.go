package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// TaskSort orders a task listing.
type TaskSort string

// Task listing orders (the API's sort values).
const (
	SortCreatedAt   TaskSort = "createdAt"
	SortStartedAt   TaskSort = "startedAt"
	SortCompletedAt TaskSort = "completedAt"
)

var sortColumns = map[TaskSort]string{
	SortCreatedAt: "created_at", SortStartedAt: "started_at", SortCompletedAt: "completed_at",
}

// TaskQuery selects and orders tasks. The zero value lists every task,
// newest first, without a limit.
type TaskQuery struct {
	Statuses []TaskStatus
	// Search matches title or description, case-insensitively.
	Search string
	// BatchID selects the tasks of one batch.
	BatchID string
	Sort    TaskSort
	Asc     bool
	Limit   int
	Offset  int
}

// TaskSummary is a task with its file counts, as listings show it.
type TaskSummary struct {
	Task
	InputFileCount  int
	OutputFileCount int
}

// ListTasks returns the tasks q selects and how many there are in all.
func (s *Store) ListTasks(ctx context.Context, q TaskQuery) ([]TaskSummary, int64, error) {
	col, ok := sortColumns[q.Sort]
	if q.Sort == "" {
		col, ok = "created_at", true
	}
	if !ok {
		return nil, 0, errdefs.Invalidf("unknown sort %q: want createdAt, startedAt or completedAt", q.Sort)
	}
	for _, st := range q.Statuses {
		if !st.Valid() {
			return nil, 0, errdefs.Invalidf("unknown status %q", st)
		}
	}
	where := s.db.WithContext(ctx).Model(&Task{})
	if len(q.Statuses) > 0 {
		where = where.Where("status IN ?", q.Statuses)
	}
	if q.BatchID != "" {
		where = where.Where("batch_id = ?", q.BatchID)
	}
	if q.Search != "" {
		like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(strings.ToLower(q.Search)) + "%"
		where = where.Where(`(LOWER(title) LIKE ? ESCAPE '\' OR LOWER(description) LIKE ? ESCAPE '\')`, like, like)
	}
	var total int64
	if err := where.Session(&gorm.Session{}).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count tasks: %w", classify(err))
	}
	dir := "DESC"
	if q.Asc {
		dir = "ASC"
	}
	// NULLs (not started, not completed) last either way; rowid breaks ties
	// in creation order.
	list := where.Session(&gorm.Session{}).Order(fmt.Sprintf("%s IS NULL, %s %s, rowid %s", col, col, dir, dir))
	if q.Limit > 0 {
		list = list.Limit(q.Limit)
	}
	if q.Offset > 0 {
		list = list.Offset(q.Offset)
	}
	var tasks []Task
	if err := list.Find(&tasks).Error; err != nil {
		return nil, 0, fmt.Errorf("list tasks: %w", classify(err))
	}
	out := make([]TaskSummary, len(tasks))
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		out[i].Task = t
		ids[i] = t.ID
	}
	if len(ids) == 0 {
		return out, total, nil
	}
	var counts []struct {
		TaskID string
		Kind   FileKind
		N      int
	}
	if err := s.db.WithContext(ctx).Model(&TaskFile{}).Select("task_id, kind, COUNT(*) AS n").
		Where("task_id IN ?", ids).Group("task_id, kind").Scan(&counts).Error; err != nil {
		return nil, 0, fmt.Errorf("count task files: %w", classify(err))
	}
	byID := make(map[string]*TaskSummary, len(out))
	for i := range out {
		byID[out[i].ID] = &out[i]
	}
	for _, c := range counts {
		if ts := byID[c.TaskID]; ts != nil {
			if c.Kind == FileInput {
				ts.InputFileCount = c.N
			} else {
				ts.OutputFileCount = c.N
			}
		}
	}
	return out, total, nil
}

// TasksInStatus returns the tasks in any of the statuses, oldest first (the
// queue's order).
func (s *Store) TasksInStatus(ctx context.Context, statuses ...TaskStatus) ([]Task, error) {
	var tasks []Task
	if err := s.db.WithContext(ctx).Where("status IN ?", statuses).Order("created_at, rowid").Find(&tasks).Error; err != nil {
		return nil, fmt.Errorf("tasks in %v: %w", statuses, classify(err))
	}
	return tasks, nil
}

// CountTasks counts tasks by status.
func (s *Store) CountTasks(ctx context.Context) (map[TaskStatus]int, error) {
	var rows []struct {
		Status TaskStatus
		N      int
	}
	if err := s.db.WithContext(ctx).Model(&Task{}).Select("status, COUNT(*) AS n").Group("status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count tasks: %w", classify(err))
	}
	out := make(map[TaskStatus]int, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// Update is a change to a task made in one transaction: Mutate edits the
// row (return an error to abort), Files are added to the task's files and
// Events to its activity log.
type Update struct {
	Mutate func(*Task) error
	Files  []TaskFile
	Events []Event
	// Writeback are changes of the task's agent to its host folders, added
	// for review or (by ID) saved with a new state.
	Writeback []WritebackItem
}

// UpdateTask applies u to a task atomically and returns the task and events
// as stored.
func (s *Store) UpdateTask(ctx context.Context, id string, u Update) (Task, []Event, error) {
	var (
		t   Task
		out []Event
	)
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var err error
		t, out, err = updateTask(tx, id, u, true)
		return err
	})
	if err != nil {
		return Task{}, nil, err
	}
	return t, out, nil
}

// TaskUpdate is one task's Update in a batch (UpdateTasks).
type TaskUpdate struct {
	ID string
	Update
}

// UpdateTasks applies a batch of updates in one transaction, each as
// UpdateTask would and in order, and returns each one's error: an update
// that fails (its Mutate refuses, its task is gone) is rolled back alone
// and the others stand. An error of the transaction itself is every
// update's. One commit for many updates is what lets the agents of a busy
// helper record their steps without queueing behind one another's
// commits.
func (s *Store) UpdateTasks(ctx context.Context, batch []TaskUpdate) []error {
	errs := make([]error, len(batch))
	err := s.tx(ctx, func(tx *gorm.DB) error {
		for i, b := range batch {
			if err := tx.Exec("SAVEPOINT task_update").Error; err != nil {
				return fmt.Errorf("update tasks: %w", classify(err))
			}
			_, _, errs[i] = updateTask(tx, b.ID, b.Update, false)
			if errs[i] != nil {
				if err := tx.Exec("ROLLBACK TO task_update").Error; err != nil {
					return fmt.Errorf("update tasks: %w", classify(err))
				}
			}
			if err := tx.Exec("RELEASE task_update").Error; err != nil {
				return fmt.Errorf("update tasks: %w", classify(err))
			}
		}
		return nil
	})
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// updateTask is UpdateTask inside tx. Unless read is set, an update of
// events alone does not read the task (the returned one is then zero): a
// missing task is the events' foreign key's refusal.
func updateTask(tx *gorm.DB, id string, u Update, read bool) (Task, []Event, error) {
	var t Task
	if read || u.Mutate != nil || len(u.Files) > 0 || len(u.Writeback) > 0 {
		if err := take(tx, "task", id, &t); err != nil {
			return Task{}, nil, err
		}
	}
	if u.Mutate != nil {
		if err := u.Mutate(&t); err != nil {
			return Task{}, nil, err
		}
		if err := tx.Omit("Task").Save(&t).Error; err != nil {
			return Task{}, nil, fmt.Errorf("update task %s: %w", id, classify(err))
		}
	}
	if len(u.Files) > 0 {
		for i := range u.Files {
			u.Files[i].ID, u.Files[i].TaskID = 0, id
		}
		if err := tx.Omit("Task").Create(&u.Files).Error; err != nil {
			return Task{}, nil, fmt.Errorf("add files to task %s: %w", id, classify(err))
		}
	}
	if len(u.Writeback) > 0 {
		for i := range u.Writeback {
			u.Writeback[i].TaskID = id
		}
		if err := tx.Omit("Task").Save(&u.Writeback).Error; err != nil {
			return Task{}, nil, fmt.Errorf("add the writeback review of task %s: %w", id, classify(err))
		}
	}
	out, err := appendEvents(tx, id, u.Events)
	if err != nil {
		return Task{}, nil, err
	}
	return t, out, nil
}

// LastScreenshot returns the data-directory-relative path of a task's latest
// screenshot, or an error of class not found.
func (s *Store) LastScreenshot(ctx context.Context, taskID string) (string, error) {
	e, err := first[Event](s.db.WithContext(ctx).Where("task_id = ? AND screenshot_path <> ''", taskID).Order("seq DESC"),
		errdefs.NotFoundf("task %s has no screenshot yet", taskID), "last screenshot of task "+taskID)
	return e.ScreenshotPath, err
}

// CountEvents returns the number of events of a task.
func (s *Store) CountEvents(ctx context.Context, taskID string) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&Event{}).Where("task_id = ?", taskID).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count events of task %s: %w", taskID, classify(err))
	}
	return n, nil
}

// ModelUsage is the LLM use of the tasks of one provider and model.
type ModelUsage struct {
	ProviderName     string
	ModelID          string
	Tasks            int64
	PromptTokens     int64
	CompletionTokens int64
	CostUSD          float64
}

// UsageSince sums the tokens and cost of the tasks started (or, not yet
// started, created) at or after since, per provider and model, most costly
// first. A running task counts with what it has used so far.
func (s *Store) UsageSince(ctx context.Context, since time.Time) ([]ModelUsage, error) {
	var out []ModelUsage
	err := s.db.WithContext(ctx).Model(&Task{}).
		Select("provider_name, model_id, COUNT(*) AS tasks, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, "+
			"COALESCE(SUM(completion_tokens), 0) AS completion_tokens, COALESCE(SUM(cost_usd), 0) AS cost_usd").
		Where("COALESCE(started_at, created_at) >= ?", since.UTC()).
		Group("provider_name, model_id").
		Order("cost_usd DESC, prompt_tokens + completion_tokens DESC, provider_name, model_id").
		Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("sum usage since %s: %w", since.Format(time.RFC3339), classify(err))
	}
	return out, nil
}
