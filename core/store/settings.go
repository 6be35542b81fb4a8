package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hivecrew/hivecrew/core/config"
)

// Setting is one persisted setting: its JSON name and its JSON value.
type Setting struct {
	Key       string `gorm:"primaryKey"`
	Value     string `gorm:"not null"`
	UpdatedAt time.Time
}

// LoadSettings returns the persisted settings over defaults. A stored value
// this version cannot use (a removed setting, a value out of today's range)
// is logged and left at its default rather than stopping the helper.
func (s *Store) LoadSettings(ctx context.Context, defaults config.Settings) (config.Settings, error) {
	return s.loadSettings(s.db.WithContext(ctx), defaults)
}

func (s *Store) loadSettings(db *gorm.DB, defaults config.Settings) (config.Settings, error) {
	var rows []Setting
	if err := db.Find(&rows).Error; err != nil {
		return defaults, fmt.Errorf("load settings: %w", classify(err))
	}
	stored := make(map[string]json.RawMessage, len(rows))
	for _, r := range rows {
		stored[r.Key] = json.RawMessage(r.Value)
	}
	if len(stored) == 0 {
		return defaults.Clone(), nil
	}
	all, err := json.Marshal(stored)
	if err != nil {
		return defaults, fmt.Errorf("load settings: %w", err)
	}
	if merged, err := defaults.Patch(all); err == nil {
		return merged, nil
	}
	// Some stored value is unusable: apply them one by one and keep the rest.
	out := defaults.Clone()
	for _, key := range slices.Sorted(maps.Keys(stored)) {
		one, _ := json.Marshal(map[string]json.RawMessage{key: stored[key]})
		next, err := out.Patch(one)
		if err != nil {
			s.log.Warn("ignoring stored setting", "setting", key, "err", err)
			continue
		}
		out = next
	}
	return out, nil
}

// SaveSettings validates and persists every setting in one transaction.
func (s *Store) SaveSettings(ctx context.Context, settings config.Settings) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		return saveSettings(tx, settings)
	})
}

func saveSettings(tx *gorm.DB, settings config.Settings) error {
	if err := settings.Validate(); err != nil {
		return err
	}
	raw, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("save settings: %w", err)
	}
	rows := make([]Setting, 0, len(fields))
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		rows = append(rows, Setting{Key: key, Value: string(fields[key])})
	}
	err = tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
	}).Create(&rows).Error
	if err != nil {
		return fmt.Errorf("save settings: %w", classify(err))
	}
	return nil
}

// PatchSettings applies a partial update (a JSON object of setting names to
// values) to the persisted settings atomically and returns the result. Bad
// names or values are errors of class errdefs.ErrInvalid and change nothing.
func (s *Store) PatchSettings(ctx context.Context, defaults config.Settings, patch []byte) (config.Settings, error) {
	var out config.Settings
	err := s.tx(ctx, func(tx *gorm.DB) error {
		cur, err := s.loadSettings(tx, defaults)
		if err != nil {
			return err
		}
		next, err := cur.Patch(patch)
		if err != nil {
			return err
		}
		if err := saveSettings(tx, next); err != nil {
			return err
		}
		out = next
		return nil
	})
	return out, err
}
