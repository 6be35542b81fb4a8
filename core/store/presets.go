package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Preset is a saved task: its configuration (what POST /tasks takes) and
// input files, launched by name from the dashboard, the menu bar or the CLI.
type Preset struct {
	ID   string `gorm:"primaryKey"`
	Name string `gorm:"not null;uniqueIndex"`
	// Task is the new task's configuration, checked as POST /tasks checks
	// it when the preset is saved and again when it is launched.
	Task       wire.CreateTask `gorm:"serializer:json;not null"`
	UseCount   int             `gorm:"not null"`
	LastUsedAt *time.Time
	CreatedAt  time.Time `gorm:"not null"`
	UpdatedAt  time.Time
}

// PresetFile is an input file given to every task a preset launches.
type PresetFile struct {
	ID        int64   `gorm:"primaryKey;autoIncrement"`
	PresetID  string  `gorm:"not null;uniqueIndex:idx_preset_file,priority:1"`
	Preset    *Preset `gorm:"constraint:OnDelete:CASCADE"`
	Name      string  `gorm:"not null;uniqueIndex:idx_preset_file,priority:2"`
	Size      int64   `gorm:"not null"`
	MimeType  string
	Path      string    `gorm:"not null"`
	CreatedAt time.Time `gorm:"not null"`
}

// MaxPresetName is the longest preset name, in characters.
const MaxPresetName = 80

// CheckPresetName trims a preset's name and refuses an empty, overlong or
// multi-line one.
func CheckPresetName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errdefs.Invalidf("name is required: a preset is launched by its name")
	case utf8.RuneCountInString(name) > MaxPresetName:
		return "", errdefs.Invalidf("name is %d characters, over the limit of %d", utf8.RuneCountInString(name), MaxPresetName)
	case strings.ContainsAny(name, "\r\n\t"):
		return "", errdefs.Invalidf("name %q: one line, please", name)
	}
	return name, nil
}

// CreatePreset stores a preset and its input files in one transaction. A
// name already taken (compared without case) is a conflict.
func (s *Store) CreatePreset(ctx context.Context, p *Preset, files []PresetFile) error {
	name, err := CheckPresetName(p.Name)
	if err != nil {
		return err
	}
	p.Name = name
	if p.ID == "" {
		p.ID = uuid.NewString()
	}
	now := time.Now().UTC()
	p.CreatedAt, p.UpdatedAt = now, now
	for i := range files {
		f := &files[i]
		f.ID, f.PresetID, f.CreatedAt = 0, p.ID, now
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		if err := presetNameFree(tx, p.Name, ""); err != nil {
			return err
		}
		if err := tx.Create(p).Error; err != nil {
			return fmt.Errorf("create preset: %w", classify(err))
		}
		if len(files) > 0 {
			if err := tx.Omit("Preset").Create(&files).Error; err != nil {
				return fmt.Errorf("create preset %s: files: %w", p.Name, classify(err))
			}
		}
		return nil
	})
}

// presetNameFree refuses a name another preset (not except) has.
func presetNameFree(tx *gorm.DB, name, except string) error {
	var n int64
	if err := tx.Model(&Preset{}).Where("lower(name) = lower(?) AND id <> ?", name, except).Count(&n).Error; err != nil {
		return fmt.Errorf("check preset name: %w", classify(err))
	}
	if n > 0 {
		return errdefs.Conflictf("a preset named %q exists already", name)
	}
	return nil
}

// FindPreset returns a preset by id, or by name (without case).
func (s *Store) FindPreset(ctx context.Context, idOrName string) (Preset, error) {
	return first[Preset](s.db.WithContext(ctx).Where("id = ?", idOrName).Or("lower(name) = lower(?)", strings.TrimSpace(idOrName)),
		errdefs.NotFoundf("no preset %q", idOrName), "read preset "+idOrName)
}

// PresetFiles returns a preset's input files, by name.
func (s *Store) PresetFiles(ctx context.Context, id string) ([]PresetFile, error) {
	return list[PresetFile](s.db.WithContext(ctx).Where("preset_id = ?", id), "name", "preset "+id+" files")
}

// ListPresets returns every preset, most used recently first, then by
// name.
func (s *Store) ListPresets(ctx context.Context) ([]Preset, error) {
	return list[Preset](s.db.WithContext(ctx), "last_used_at IS NULL, last_used_at DESC, lower(name)", "list presets")
}

// UpdatePreset edits a preset atomically; a new name must be free.
func (s *Store) UpdatePreset(ctx context.Context, id string, mutate func(*Preset) error) (Preset, error) {
	var p Preset
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := take(tx, "preset", id, &p); err != nil {
			return err
		}
		if err := mutate(&p); err != nil {
			return err
		}
		name, err := CheckPresetName(p.Name)
		if err != nil {
			return err
		}
		p.Name = name
		if err := presetNameFree(tx, p.Name, p.ID); err != nil {
			return err
		}
		p.UpdatedAt = time.Now().UTC()
		if err := tx.Save(&p).Error; err != nil {
			return fmt.Errorf("update preset %s: %w", id, classify(err))
		}
		return nil
	})
	return p, err
}

// DeletePreset deletes a preset and its file rows; tasks it launched stay.
func (s *Store) DeletePreset(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("preset_id = ?", id).Delete(&PresetFile{}).Error; err != nil {
			return fmt.Errorf("delete preset %s files: %w", id, classify(err))
		}
		return affected(tx.Where("id = ?", id).Delete(&Preset{}), "delete preset "+id, errdefs.NotFoundf("no preset %s", id))
	})
}

// LaunchPreset stores the task a preset launched and its inputs, and counts
// the use, in one transaction.
func (s *Store) LaunchPreset(ctx context.Context, id string, t *Task, inputs []TaskFile) error {
	if err := prepareTask(t, inputs); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		if err := createTask(tx, t, inputs); err != nil {
			return err
		}
		now := time.Now().UTC()
		res := tx.Model(&Preset{}).Where("id = ?", id).Updates(map[string]any{"use_count": gorm.Expr("use_count + 1"), "last_used_at": now})
		return affected(res, "count the use of preset "+id, errdefs.NotFoundf("no preset %s", id))
	})
}
