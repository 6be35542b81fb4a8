package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hivecrew/hivecrew/core/store"
)

// benchStore measures the writes every agent step makes (an event) and every
// task makes (task + input file + first event), and authenticating an API
// request. The baseline is the same writes through gorm on SQLite's default
// configuration (rollback journal, synchronous=FULL, deferred transactions):
// what an untuned store costs.
func benchStore(ctx context.Context, log *slog.Logger) ([]Metric, error) {
	dir, err := os.MkdirTemp("", "hc-bench-store")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(ctx, filepath.Join(dir, "hivecrew.db"), log)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	base, err := openBaseline(filepath.Join(dir, "baseline.db"))
	if err != nil {
		return nil, err
	}
	const n, warm = 400, 20
	const baselineName = "SQLite defaults"

	newTask := func() *store.Task {
		return &store.Task{Description: "Process the PDF in inbox and save a summary to outbox", ProviderName: "openai", ModelID: "gpt-test"}
	}
	input := func() []store.TaskFile {
		return []store.TaskFile{{Name: "report.pdf", Size: 1 << 20, MimeType: "application/pdf", Path: "Tasks/x/report.pdf"}}
	}

	var metrics []Metric
	create := Metric{Name: "store: create task (+file, +event)", Target: 5 * time.Millisecond, BaselineName: baselineName, Samples: n}
	if create.P50, create.P95, err = measure(n, warm, func() error { return st.CreateTask(ctx, newTask(), input()) }); err != nil {
		return nil, err
	}
	if create.Baseline, _, err = measure(n, warm, func() error { return baselineCreate(base, newTask(), input()) }); err != nil {
		return nil, err
	}
	metrics = append(metrics, create)

	task := newTask()
	if err := st.CreateTask(ctx, task, nil); err != nil {
		return nil, err
	}
	btask := newTask()
	if err := baselineCreate(base, btask, nil); err != nil {
		return nil, err
	}
	ev := func() store.Event {
		return store.Event{Type: "tool_call_result", ActivityType: "tool_result", Summary: "mouse_click at (640, 400)"}
	}
	appendEv := Metric{Name: "store: append step event", Target: 2 * time.Millisecond, BaselineName: baselineName, Samples: n}
	if appendEv.P50, appendEv.P95, err = measure(n, warm, func() error { _, err := st.AppendEvents(ctx, task.ID, ev()); return err }); err != nil {
		return nil, err
	}
	seq := int64(1)
	if appendEv.Baseline, _, err = measure(n, warm, func() error {
		seq++
		e := ev()
		e.TaskID, e.Seq, e.Timestamp = btask.ID, seq, time.Now().UTC()
		return base.Omit("Task").Create(&e).Error
	}); err != nil {
		return nil, err
	}
	metrics = append(metrics, appendEv)

	key, _, err := st.CreateAPIKey(ctx, "bench")
	if err != nil {
		return nil, err
	}
	verify := Metric{Name: "store: verify API key", Target: time.Millisecond, Samples: n}
	if verify.P50, verify.P95, err = measure(n, warm, func() error { _, err := st.VerifyAPIKey(ctx, key); return err }); err != nil {
		return nil, err
	}
	metrics = append(metrics, verify)
	return metrics, nil
}

func openBaseline(path string) (*gorm.DB, error) {
	db, err := gorm.Open(sqlite.Open(path+"?_foreign_keys=on"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil, fmt.Errorf("open baseline: %w", err)
	}
	if err := db.AutoMigrate(&store.Task{}, &store.TaskFile{}, &store.Event{}); err != nil {
		return nil, fmt.Errorf("migrate baseline: %w", err)
	}
	return db, nil
}

func baselineCreate(db *gorm.DB, t *store.Task, files []store.TaskFile) error {
	t.ID, t.Status, t.Title, t.CreatedAt = uuid.NewString(), store.StatusQueued, t.Description, time.Now().UTC()
	return db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Omit("Task").Create(t).Error; err != nil {
			return err
		}
		for i := range files {
			files[i].TaskID, files[i].Kind, files[i].CreatedAt = t.ID, store.FileInput, t.CreatedAt
		}
		if len(files) > 0 {
			if err := tx.Omit("Task").Create(&files).Error; err != nil {
				return err
			}
		}
		return tx.Omit("Task").Create(&store.Event{TaskID: t.ID, Seq: 1, Type: "status_change", Timestamp: t.CreatedAt}).Error
	})
}
