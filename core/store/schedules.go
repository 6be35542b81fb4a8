package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Schedule creates tasks at a time or on a recurrence.
type Schedule struct {
	ID              string `gorm:"primaryKey"`
	Title           string `gorm:"not null"`
	Description     string `gorm:"not null"`
	ProviderName    string `gorm:"not null"`
	ModelID         string `gorm:"not null"`
	OutputDirectory string
	IsEnabled       bool   `gorm:"not null"`
	ScheduleType    string `gorm:"not null"` // "one-time", "recurring"
	ScheduledAt     *time.Time
	RecurrenceType  string // daily, weekly, monthly
	DaysOfWeek      []int  `gorm:"serializer:json"` // 1 = Sunday .. 7
	DayOfMonth      int
	Hour            int
	Minute          int
	// TimeZone is the IANA zone the recurrence is computed in.
	TimeZone       string
	TemplateID     string
	TimeoutMinutes int
	MaxIterations  int
	NetworkMode    string
	ToolPolicy     map[string]string `gorm:"serializer:json"`
	// ReasoningEnabled and ReasoningEffort go to every task it creates.
	ReasoningEnabled *bool
	ReasoningEffort  string
	// PlanFirst, HostFolders (real paths), Provisioning, AllowHosts and the
	// budgets go to every task it creates, as POST /tasks takes them.
	PlanFirst    bool
	HostFolders  []string          `gorm:"serializer:json"`
	Provisioning *TaskProvisioning `gorm:"serializer:json"`
	AllowHosts   []string          `gorm:"serializer:json"`
	BudgetUSD    *float64
	BudgetTokens *int64
	NextRunAt    *time.Time `gorm:"index"`
	LastRunAt    *time.Time
	CreatedAt    time.Time `gorm:"not null"`
	UpdatedAt    time.Time
}

// ScheduleFile is an input file given to every task a schedule creates.
type ScheduleFile struct {
	ID         int64     `gorm:"primaryKey;autoIncrement"`
	ScheduleID string    `gorm:"not null;uniqueIndex:idx_schedule_file,priority:1"`
	Schedule   *Schedule `gorm:"constraint:OnDelete:CASCADE"`
	Name       string    `gorm:"not null;uniqueIndex:idx_schedule_file,priority:2"`
	Size       int64     `gorm:"not null"`
	MimeType   string
	Path       string    `gorm:"not null"`
	CreatedAt  time.Time `gorm:"not null"`
}

// CreateSchedule stores a schedule and its input files in one transaction.
func (s *Store) CreateSchedule(ctx context.Context, sc *Schedule, files []ScheduleFile) error {
	if strings.TrimSpace(sc.Description) == "" {
		return errdefs.Invalidf("a schedule needs a description")
	}
	if sc.ID == "" {
		sc.ID = uuid.NewString()
	}
	if sc.Title == "" {
		sc.Title = titleFrom(sc.Description)
	}
	now := time.Now().UTC()
	sc.CreatedAt = now
	if err := eachInput(files, func(f *ScheduleFile) string { return f.Name }, func(f *ScheduleFile) {
		f.ID, f.ScheduleID, f.CreatedAt = 0, sc.ID, now
	}); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(sc).Error; err != nil {
			return fmt.Errorf("create schedule: %w", classify(err))
		}
		if len(files) > 0 {
			if err := tx.Omit("Schedule").Create(&files).Error; err != nil {
				return fmt.Errorf("create schedule %s: files: %w", sc.ID, classify(err))
			}
		}
		return nil
	})
}

// GetSchedule returns a schedule, or an error of class not found.
func (s *Store) GetSchedule(ctx context.Context, id string) (Schedule, error) {
	var sc Schedule
	if err := take(s.db.WithContext(ctx), "schedule", id, &sc); err != nil {
		return Schedule{}, err
	}
	return sc, nil
}

// ScheduleFiles returns a schedule's input files, by name.
func (s *Store) ScheduleFiles(ctx context.Context, id string) ([]ScheduleFile, error) {
	return list[ScheduleFile](s.db.WithContext(ctx).Where("schedule_id = ?", id), "name", "schedule "+id+" files")
}

// ListSchedules returns schedules by their next run, soonest first (as
// the Swift server lists them), those with none (disabled, done) last by
// creation, newest first; and the total.
func (s *Store) ListSchedules(ctx context.Context, limit, offset int) ([]Schedule, int64, error) {
	var total int64
	if err := s.db.WithContext(ctx).Model(&Schedule{}).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count schedules: %w", classify(err))
	}
	q := s.db.WithContext(ctx).Order("next_run_at IS NULL, next_run_at ASC, created_at DESC, rowid DESC").Offset(offset)
	if limit > 0 {
		q = q.Limit(limit)
	}
	var out []Schedule
	if err := q.Find(&out).Error; err != nil {
		return nil, 0, fmt.Errorf("list schedules: %w", classify(err))
	}
	return out, total, nil
}

// UpdateSchedule edits a schedule atomically.
func (s *Store) UpdateSchedule(ctx context.Context, id string, mutate func(*Schedule) error) (Schedule, error) {
	var sc Schedule
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := take(tx, "schedule", id, &sc); err != nil {
			return err
		}
		if err := mutate(&sc); err != nil {
			return err
		}
		if err := tx.Save(&sc).Error; err != nil {
			return fmt.Errorf("update schedule %s: %w", id, classify(err))
		}
		return nil
	})
	return sc, err
}

// DeleteSchedule deletes a schedule and its file rows; tasks it created stay.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	return deleteByID[Schedule](s.db.WithContext(ctx), "schedule", id)
}

// DueSchedules returns the enabled schedules whose next run is at or before
// now, earliest first.
func (s *Store) DueSchedules(ctx context.Context, now time.Time) ([]Schedule, error) {
	var out []Schedule
	err := s.db.WithContext(ctx).Where("is_enabled AND next_run_at IS NOT NULL AND next_run_at <= ?", now.UTC()).
		Order("next_run_at").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("due schedules: %w", classify(err))
	}
	return out, nil
}

// NextScheduleRun returns the earliest next run of an enabled schedule.
func (s *Store) NextScheduleRun(ctx context.Context) (*time.Time, error) {
	// None is the zero schedule, whose next run is nil.
	sc, err := first[Schedule](s.db.WithContext(ctx).Where("is_enabled AND next_run_at IS NOT NULL").Order("next_run_at"), nil, "next schedule run")
	if err != nil {
		return nil, err
	}
	return sc.NextRunAt, nil
}

// FireSchedule creates a task for a schedule and updates the schedule (its
// last and next run) in one transaction, so a run is never lost nor doubled
// by a crash in between.
func (s *Store) FireSchedule(ctx context.Context, id string, t *Task, inputs []TaskFile, mutate func(*Schedule) error) error {
	sid := id
	t.ScheduleID = &sid
	if err := prepareTask(t, inputs); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		var sc Schedule
		if err := take(tx, "schedule", id, &sc); err != nil {
			return err
		}
		if err := mutate(&sc); err != nil {
			return err
		}
		if err := tx.Save(&sc).Error; err != nil {
			return fmt.Errorf("run schedule %s: %w", id, classify(err))
		}
		return createTask(tx, t, inputs)
	})
}
