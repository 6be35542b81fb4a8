package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

func newTask(desc string) *Task {
	return &Task{Description: desc, ProviderName: "openai", ModelID: "gpt-test"}
}

func TestCreateTaskWithFilesAndFirstEvent(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	task := newTask("Process the PDF in inbox\nand save a summary to outbox")
	err := s.CreateTask(ctx, task, []TaskFile{
		{Name: "report.pdf", Size: 1234, MimeType: "application/pdf", Path: "Tasks/x/report.pdf"},
		{Name: "notes.txt", Size: 5, Path: "Tasks/x/notes.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusQueued || got.Title != "Process the PDF in inbox" || got.CreatedAt.IsZero() {
		t.Fatalf("stored task = %+v", got)
	}
	files, err := s.TaskFiles(ctx, task.ID, FileInput)
	if err != nil || len(files) != 2 || files[0].Name != "notes.txt" || files[1].Size != 1234 {
		t.Fatalf("input files = %+v, %v", files, err)
	}
	events, err := s.ListEvents(ctx, task.ID, 0, 0)
	if err != nil || len(events) != 1 || events[0].Seq != 1 || events[0].Type != "status_change" || events[0].Status != "queued" {
		t.Fatalf("first events = %+v, %v", events, err)
	}
}

func TestCreateTaskRejectsBadInputAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	for name, c := range map[string]struct {
		task  *Task
		files []TaskFile
	}{
		"no description":  {newTask("  "), nil},
		"no model":        {&Task{Description: "x", ProviderName: "p"}, nil},
		"bad status":      {&Task{Description: "x", ProviderName: "p", ModelID: "m", Status: "done"}, nil},
		"duplicate files": {newTask("x"), []TaskFile{{Name: "a", Path: "a"}, {Name: "a", Path: "b"}}},
	} {
		if err := s.CreateTask(ctx, c.task, c.files); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: CreateTask = %v, want invalid", name, err)
		}
	}
	var n int64
	s.db.Model(&Task{}).Count(&n)
	if n != 0 {
		t.Fatalf("%d tasks written by refused creates", n)
	}
}

func TestCreateTaskIsAtomic(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	first := newTask("first")
	if err := s.CreateTask(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	// Same ID again: the insert fails and no file row of the second attempt survives.
	dup := newTask("second")
	dup.ID = first.ID
	err := s.CreateTask(ctx, dup, []TaskFile{{Name: "in.txt", Path: "p"}})
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("duplicate id = %v, want conflict", err)
	}
	var files int64
	s.db.Model(&TaskFile{}).Count(&files)
	if files != 0 {
		t.Fatalf("%d file rows left by a failed create", files)
	}
}

func TestTitleIsShortened(t *testing.T) {
	title := titleFrom(strings.Repeat("é", 200))
	if n := len([]rune(title)); n != 80 || !strings.HasSuffix(title, "…") {
		t.Fatalf("title of %d runes: %q", n, title)
	}
}

func TestEventsAreNumberedAndCascade(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	task := newTask("numbered")
	if err := s.CreateTask(ctx, task, []TaskFile{{Name: "a", Path: "a"}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.AppendEvents(ctx, task.ID, Event{Type: "tool_call_start", Summary: "click"}, Event{Type: "tool_call_result"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Seq != 2 || got[1].Seq != 3 {
		t.Fatalf("seqs = %d, %d; want 2, 3", got[0].Seq, got[1].Seq)
	}
	since, _ := s.ListEvents(ctx, task.ID, 2, 0)
	if len(since) != 1 || since[0].Seq != 3 {
		t.Fatalf("events since 2 = %+v", since)
	}
	if _, err := s.AppendEvents(ctx, "missing", Event{Type: "x"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("event for a missing task = %v, want not found (foreign key)", err)
	}
	if _, err := s.AppendEvents(ctx, task.ID, Event{}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("event without a type = %v, want invalid", err)
	}

	if err := s.DeleteTask(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	var events, files int64
	s.db.Model(&Event{}).Count(&events)
	s.db.Model(&TaskFile{}).Count(&files)
	if events != 0 || files != 0 {
		t.Fatalf("after delete: %d events, %d files remain", events, files)
	}
	if err := s.DeleteTask(ctx, task.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("second delete = %v, want not found", err)
	}
	if _, err := s.GetTask(ctx, task.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("get deleted = %v, want not found", err)
	}
}

// TestDeleteTaskWithInterventions: a task whose session holds
// interventions (a takeover, added instructions) is deleted with them, on
// a new database and on one migrated from schema 5, whose interventions
// table referenced sessions without ON DELETE CASCADE (the delete failed
// with a foreign key error, answered as 404).
func TestDeleteTaskWithInterventions(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	withIntervention := func(s *Store, name string) *Task {
		t.Helper()
		task := newTask(name)
		if err := s.CreateTask(ctx, task, nil); err != nil {
			t.Fatal(err)
		}
		sess := &AgentSession{ID: "sess-" + task.ID, TaskID: task.ID, StartedAt: time.Now(), TracePath: "trace"}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if err := s.AddIntervention(ctx, Intervention{SessionID: sess.ID, Kind: InterventionTakeover, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		return task
	}
	deleted := func(s *Store, task *Task) {
		t.Helper()
		if err := s.DeleteTask(ctx, task.ID); err != nil {
			t.Fatalf("delete a task with an intervention: %v", err)
		}
		var left int64
		s.db.Model(&Intervention{}).Where("session_id = ?", "sess-"+task.ID).Count(&left)
		if left != 0 {
			t.Fatalf("%d interventions outlive their task", left)
		}
	}
	deleted(s, withIntervention(s, "new database"))

	// A database of schema 5: the old table, and version 6 not applied.
	for _, q := range []string{
		"DROP TABLE interventions",
		"CREATE TABLE `interventions` (`id` integer PRIMARY KEY AUTOINCREMENT,`session_id` text NOT NULL,`kind` text NOT NULL,`text` text,`created_at` datetime NOT NULL,CONSTRAINT `fk_agent_sessions_interventions` FOREIGN KEY (`session_id`) REFERENCES `agent_sessions`(`id`))",
		"CREATE INDEX `idx_interventions_session_id` ON `interventions`(`session_id`)",
		"DELETE FROM schema_versions WHERE version >= 6",
	} {
		if err := s.db.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	old := withIntervention(s, "schema 5")
	if err := s.DeleteTask(ctx, old.ID); err == nil {
		t.Fatal("the schema 5 table let the task go: the test does not rebuild the old schema")
	}
	s.Close()
	s2, err := Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	deleted(s2, old)
	if !s2.db.Migrator().HasIndex(&Intervention{}, "SessionID") {
		t.Error("the rebuilt interventions table lost its session index")
	}
	if err := s2.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEventPointRoundTrip: an event's point (a click's, a drag's with its
// end) is stored and read back as it was; an event without one reads nil,
// as do events stored before schema 16 added the column.
func TestEventPointRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	task := newTask("click things")
	if err := s.CreateTask(ctx, task, nil); err != nil {
		t.Fatal(err)
	}
	toX, toY := 700.0, 0.0 // 0 is a coordinate, not "none"
	click := &EventPoint{X: 412, Y: 310.5, Width: 1280, Height: 800}
	drag := &EventPoint{X: 10, Y: 20, ToX: &toX, ToY: &toY, Width: 1024, Height: 640}
	if _, err := s.AppendEvents(ctx, task.ID,
		Event{Type: "tool_call_start", Summary: "click at (412, 310)", Point: click},
		Event{Type: "tool_call_start", Summary: "drag", Point: drag},
		Event{Type: "tool_call_result", Summary: "Done."}); err != nil {
		t.Fatal(err)
	}
	events, err := s.ListEvents(ctx, task.ID, 1, 0) // after the first status_change
	if err != nil || len(events) != 3 {
		t.Fatalf("events = %+v, %v", events, err)
	}
	if got := events[0].Point; got == nil || *got != *click {
		t.Errorf("click point = %+v, want %+v", got, click)
	}
	if got := events[1].Point; got == nil || got.X != 10 || got.Y != 20 || got.ToX == nil || *got.ToX != 700 || got.ToY == nil || *got.ToY != 0 || got.Width != 1024 || got.Height != 640 {
		t.Errorf("drag point = %+v, want %+v", got, drag)
	}
	if events[2].Point != nil {
		t.Errorf("an event without a point reads %+v", events[2].Point)
	}
	var stored *string
	if err := s.db.Raw("SELECT point FROM events WHERE task_id = ? AND seq = 4", task.ID).Scan(&stored).Error; err != nil || stored != nil {
		t.Errorf("an event without a point is stored as %v (%v), want NULL", stored, err)
	}

	// A database of schema 15: no point column. Opening it adds the column;
	// its events read without a point.
	for _, q := range []string{"ALTER TABLE events DROP COLUMN point", "DELETE FROM schema_versions WHERE version >= 16"} {
		if err := s.db.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s2, err := Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	events, err = s2.ListEvents(ctx, task.ID, 1, 0)
	if err != nil || len(events) != 3 || events[0].Point != nil {
		t.Fatalf("events of schema 15 = %+v, %v", events, err)
	}
	if _, err := s2.AppendEvents(ctx, task.ID, Event{Type: "tool_call_start", Point: click}); err != nil {
		t.Fatal(err)
	}
	events, err = s2.ListEvents(ctx, task.ID, 4, 0)
	if err != nil || len(events) != 1 || events[0].Point == nil || *events[0].Point != *click {
		t.Fatalf("a point stored after the migration = %+v, %v", events, err)
	}
}

// TestDeleteTasksAllOrNothing: a task and its subagent's task are deleted
// together with their events, file records and sessions; when one of the
// ids is gone, nothing is deleted. SessionIDs names every session a task
// had, its latest too.
func TestDeleteTasksAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	parent, child := newTask("parent"), newTask("child")
	for _, task := range []*Task{parent, child} {
		if task == child {
			child.ParentTaskID = &parent.ID
		}
		if err := s.CreateTask(ctx, task, []TaskFile{{Name: "out.txt", Path: "out.txt", Kind: FileOutput}}); err != nil {
			t.Fatal(err)
		}
		for _, sid := range []string{task.Description + "-1", task.Description + "-2"} {
			if err := s.CreateSession(ctx, &AgentSession{ID: sid, TaskID: task.ID, TracePath: sid}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sids, err := s.SessionIDs(ctx, Task{ID: parent.ID, SessionID: "parent-3"})
	if err != nil || !slices.Equal(sids, []string{"parent-1", "parent-2", "parent-3"}) {
		t.Fatalf("SessionIDs = %v, %v", sids, err)
	}
	count := func() (n [4]int64) {
		s.db.Model(&Task{}).Count(&n[0])
		s.db.Model(&Event{}).Count(&n[1])
		s.db.Model(&TaskFile{}).Count(&n[2])
		s.db.Model(&AgentSession{}).Count(&n[3])
		return n
	}
	before := count()
	if err := s.DeleteTasks(ctx, []string{parent.ID, "missing"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("delete with a missing id = %v, want not found", err)
	}
	if after := count(); after != before {
		t.Fatalf("a refused delete removed rows: %v -> %v", before, after)
	}
	if err := s.DeleteTasks(ctx, []string{parent.ID, child.ID}); err != nil {
		t.Fatal(err)
	}
	if after := count(); after != [4]int64{} {
		t.Fatalf("after delete (tasks, events, files, sessions) = %v, want none", after)
	}
}
