package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Template is what VMs are cloned from.
type Template struct {
	ID          string `gorm:"primaryKey"`
	Name        string `gorm:"not null;uniqueIndex"`
	Description string
	OS          string `gorm:"not null"` // "macos", "linux"
	Kind        string `gorm:"not null"` // "vz", "host", "rootfs"
	Path        string
	IsDefault   bool
	CPUCount    int
	MemoryMB    int
	DiskGB      int
	// AgentVersion is the guest agent version installed in the template.
	AgentVersion string
	Version      int `gorm:"not null;default:1"`
	SourceVMID   string
	CreatedAt    time.Time `gorm:"not null"`
	UpdatedAt    time.Time
	// Status is TemplateReady, TemplateBuilding, TemplateSetup or
	// TemplateFailed; StatusReason says why a build failed.
	Status       string `gorm:"not null;default:ready"`
	StatusReason string
	// Manifest names what the template was built from (a built-in manifest
	// or a folder), ManifestVersion its revision, Options the build's
	// choices ("full", extras).
	Manifest        string
	ManifestVersion int
	Options         []string `gorm:"serializer:json"`
	// ParentID is the template a sealed template's VM was cloned from.
	ParentID string
}

// Template statuses.
const (
	TemplateReady    = "ready"
	TemplateBuilding = "building"
	// TemplateSetup: built, waiting for its guided setup (macOS).
	TemplateSetup  = "setup"
	TemplateFailed = "failed"
)

// UpdateTemplate changes a template in one transaction: mutate gets the
// current row (an error from it aborts the change) and the result is
// saved and returned. A name another template has is a conflict.
func (s *Store) UpdateTemplate(ctx context.Context, id string, mutate func(*Template) error) (Template, error) {
	var out Template
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := take(tx, "template", id, &out); err != nil {
			return err
		}
		if err := mutate(&out); err != nil {
			return err
		}
		var n int64
		if err := tx.Model(&Template{}).Where("name = ? AND id <> ?", out.Name, id).Count(&n).Error; err != nil {
			return classify(err)
		}
		if n > 0 {
			return errdefs.Conflictf("a template named %q exists", out.Name)
		}
		out.UpdatedAt = time.Now().UTC()
		return classify(tx.Save(&out).Error)
	})
	if err != nil {
		return Template{}, fmt.Errorf("update template %s: %w", id, err)
	}
	return out, nil
}

// CreateTemplate inserts a new template; an id or name that exists is a
// conflict.
func (s *Store) CreateTemplate(ctx context.Context, t Template) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now().UTC()
	}
	if t.Status == "" {
		t.Status = TemplateReady
	}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&Template{}).Where("id = ? OR name = ?", t.ID, t.Name).Count(&n).Error; err != nil {
			return classify(err)
		}
		if n > 0 {
			return errdefs.Conflictf("a template with id %q or name %q exists", t.ID, t.Name)
		}
		return classify(tx.Create(&t).Error)
	})
	if err != nil {
		return fmt.Errorf("create template %s: %w", t.ID, err)
	}
	return nil
}

// DeleteTemplate removes a template record; an absent one is not found.
func (s *Store) DeleteTemplate(ctx context.Context, id string) error {
	return deleteByID[Template](s.db.WithContext(ctx), "template", id)
}

// Trace is a finished task whose session traces still exist.
type Trace struct {
	TaskID      string
	CompletedAt time.Time
	// SessionIDs are the task's agent sessions (their trace folders).
	SessionIDs []string
}

// TracesEndedBefore returns the finished tasks that ended before t and
// still have their traces, oldest first, at most limit.
func (s *Store) TracesEndedBefore(ctx context.Context, t time.Time, limit int) ([]Trace, error) {
	var terminal []TaskStatus
	for _, st := range TaskStatuses {
		// A task whose changes wait for review keeps its session: the
		// agent's versions of the files are kept there.
		if st.Terminal() && st != StatusWritebackReview {
			terminal = append(terminal, st)
		}
	}
	var tasks []Task
	err := s.db.WithContext(ctx).Where("status IN ? AND completed_at IS NOT NULL AND completed_at < ? AND trace_deleted_at IS NULL", terminal, t).
		Order("completed_at, id").Limit(limit).Find(&tasks).Error
	if err != nil {
		return nil, fmt.Errorf("find expired traces: %w", classify(err))
	}
	out := make([]Trace, 0, len(tasks))
	for _, task := range tasks {
		ids, err := sessionIDs(s.db.WithContext(ctx), task)
		if err != nil {
			return nil, err
		}
		out = append(out, Trace{TaskID: task.ID, CompletedAt: *task.CompletedAt, SessionIDs: ids})
	}
	return out, nil
}

// MarkTraceDeleted records that a task's traces are gone: the task gets
// TraceDeletedAt and its events lose their screenshot references.
func (s *Store) MarkTraceDeleted(ctx context.Context, taskID string, at time.Time) error {
	err := s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Task{}).Where("id = ?", taskID).Update("trace_deleted_at", at.UTC())
		if res.Error != nil {
			return classify(res.Error)
		}
		if res.RowsAffected == 0 {
			return errdefs.NotFoundf("task %s not found", taskID)
		}
		return classify(tx.Model(&Event{}).Where("task_id = ? AND screenshot_path <> ''", taskID).Update("screenshot_path", "").Error)
	})
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return err
		}
		return fmt.Errorf("mark the trace of task %s deleted: %w", taskID, err)
	}
	return nil
}
