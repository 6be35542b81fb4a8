package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// CreateTask stores a new task, its input files and its first status_change
// event in one transaction, so a task never exists without its files or its
// first event. The caller sets the configuration fields; ID, Status (queued
// unless set), CreatedAt and an empty Title (from the description's first
// line) are filled in. t is updated with what was stored.
func (s *Store) CreateTask(ctx context.Context, t *Task, inputs []TaskFile) error {
	if err := prepareTask(t, inputs); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *gorm.DB) error { return createTask(tx, t, inputs) })
}

// CreateTasks stores several new tasks with their inputs in one
// transaction: all of them, or none.
func (s *Store) CreateTasks(ctx context.Context, ts []Task, inputs [][]TaskFile) error {
	if len(inputs) != len(ts) {
		return errdefs.Invalidf("%d tasks with %d input lists", len(ts), len(inputs))
	}
	for i := range ts {
		if err := prepareTask(&ts[i], inputs[i]); err != nil {
			return err
		}
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		for i := range ts {
			if err := createTask(tx, &ts[i], inputs[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// prepareTask checks a new task and fills in its defaults and its files'.
func prepareTask(t *Task, inputs []TaskFile) error {
	if strings.TrimSpace(t.Description) == "" {
		return errdefs.Invalidf("a task needs a description")
	}
	if t.ProviderName == "" || t.ModelID == "" {
		return errdefs.Invalidf("a task needs a provider and a model")
	}
	if t.Status == "" {
		t.Status = StatusQueued
	}
	if !t.Status.Valid() {
		return errdefs.Invalidf("unknown task status %q", t.Status)
	}
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	if t.Title == "" {
		t.Title = titleFrom(t.Description)
	}
	now := time.Now().UTC()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	return eachInput(inputs, func(f *TaskFile) string { return f.Name }, func(f *TaskFile) {
		f.ID, f.TaskID, f.Kind = 0, t.ID, FileInput
		if f.CreatedAt.IsZero() {
			f.CreatedAt = now
		}
	})
}

// eachInput refuses input files of which two share a name (a task's or a
// schedule's inputs are one folder), and has set fill in each file in
// turn.
func eachInput[F any](files []F, name func(*F) string, set func(*F)) error {
	seen := make(map[string]bool, len(files))
	for i := range files {
		f := &files[i]
		if seen[name(f)] {
			return errdefs.Invalidf("input file %q given twice", name(f))
		}
		seen[name(f)] = true
		set(f)
	}
	return nil
}

// createTask inserts a prepared task, its inputs and its first event in tx.
func createTask(tx *gorm.DB, t *Task, inputs []TaskFile) error {
	if err := tx.Omit("Task").Create(t).Error; err != nil {
		return fmt.Errorf("create task: %w", classify(err))
	}
	if len(inputs) > 0 {
		if err := tx.Omit("Task").Create(&inputs).Error; err != nil {
			return fmt.Errorf("create task %s: input files: %w", t.ID, classify(err))
		}
	}
	_, err := appendEvents(tx, t.ID, []Event{{
		Type: "status_change", Timestamp: t.CreatedAt, Status: string(t.Status),
		ActivityType: "info", Summary: "Task created",
	}})
	return err
}

func titleFrom(description string) string { return wire.TitleFrom(description) }

// GetTask returns a task, or an error of class errdefs.ErrNotFound.
func (s *Store) GetTask(ctx context.Context, id string) (Task, error) {
	var t Task
	if err := take(s.db.WithContext(ctx), "task", id, &t); err != nil {
		return Task{}, err
	}
	return t, nil
}

// TaskFiles returns a task's files of one kind, by name.
func (s *Store) TaskFiles(ctx context.Context, taskID string, kind FileKind) ([]TaskFile, error) {
	return list[TaskFile](s.db.WithContext(ctx).Where("task_id = ? AND kind = ?", taskID, kind), "name", "task "+taskID+" files")
}

// DeleteTask deletes a task and, through the foreign keys, everything that
// belongs to it (files rows, events, sessions, questions, permissions).
func (s *Store) DeleteTask(ctx context.Context, id string) error {
	return s.DeleteTasks(ctx, []string{id})
}

// DeleteTasks deletes tasks (a task and its subagents' tasks) in one
// transaction, as DeleteTask does each: all of them, or none when one is
// not found.
func (s *Store) DeleteTasks(ctx context.Context, ids []string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		for _, id := range ids {
			if err := deleteByID[Task](tx, "task", id); err != nil {
				return err
			}
		}
		return nil
	})
}

// SessionIDs are the agent sessions a task had (each run one, a resumed
// run going on in its session), the task's latest among them, oldest
// first: whose trace folders are the task's.
func (s *Store) SessionIDs(ctx context.Context, t Task) ([]string, error) {
	return sessionIDs(s.db.WithContext(ctx), t)
}

func sessionIDs(db *gorm.DB, t Task) ([]string, error) {
	var ids []string
	if err := db.Model(&AgentSession{}).Where("task_id = ?", t.ID).Order("started_at").Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("sessions of task %s: %w", t.ID, classify(err))
	}
	if t.SessionID != "" && !slices.Contains(ids, t.SessionID) {
		ids = append(ids, t.SessionID)
	}
	return ids, nil
}

// AppendEvents adds events to a task's activity log in one transaction and
// returns them with their sequence numbers, which continue the task's
// numbering without gaps.
func (s *Store) AppendEvents(ctx context.Context, taskID string, events ...Event) ([]Event, error) {
	var out []Event
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = appendEvents(tx, taskID, events)
		return err
	})
	return out, err
}

// appendEvents numbers and inserts events inside tx. Immediate transactions
// serialise writers, so reading the last number and inserting is race-free;
// the unique (task_id, seq) index would refuse a duplicate regardless.
func appendEvents(tx *gorm.DB, taskID string, events []Event) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	var last int64
	if err := tx.Model(&Event{}).Where("task_id = ?", taskID).Select("COALESCE(MAX(seq), 0)").Scan(&last).Error; err != nil {
		return nil, fmt.Errorf("append events to task %s: %w", taskID, classify(err))
	}
	now := time.Now().UTC()
	out := make([]Event, len(events))
	for i, e := range events {
		if e.Type == "" {
			return nil, errdefs.Invalidf("event %d for task %s has no type", i, taskID)
		}
		e.ID, e.TaskID, e.Seq = 0, taskID, last+int64(i)+1
		if e.Timestamp.IsZero() {
			e.Timestamp = now
		}
		out[i] = e
	}
	if err := tx.Omit("Task").Create(&out).Error; err != nil {
		if errors.Is(err, gorm.ErrForeignKeyViolated) {
			return nil, errdefs.NotFoundf("task %s not found", taskID)
		}
		return nil, fmt.Errorf("append events to task %s: %w", taskID, classify(err))
	}
	return out, nil
}

// ListEvents returns a task's events with Seq > since, in order, at most limit
// of them (no limit when limit <= 0).
func (s *Store) ListEvents(ctx context.Context, taskID string, since int64, limit int) ([]Event, error) {
	q := s.db.WithContext(ctx).Where("task_id = ? AND seq > ?", taskID, since).Order("seq")
	if limit > 0 {
		q = q.Limit(limit)
	}
	var events []Event
	if err := q.Find(&events).Error; err != nil {
		return nil, fmt.Errorf("list events of task %s: %w", taskID, classify(err))
	}
	return events, nil
}

// ChildTasks returns the tasks a task started as subagents, oldest first.
func (s *Store) ChildTasks(ctx context.Context, parentID string) ([]Task, error) {
	return list[Task](s.db.WithContext(ctx).Where("parent_task_id = ?", parentID), "created_at, id", "list the subagents of "+parentID)
}

// WritebackItems are a task's changes to its host folders, by folder and
// path.
func (s *Store) WritebackItems(ctx context.Context, taskID string) ([]WritebackItem, error) {
	return list[WritebackItem](s.db.WithContext(ctx).Where("task_id = ?", taskID), "folder, path", "writeback of task "+taskID)
}
