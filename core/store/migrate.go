package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
)

// migration moves the schema from version-1 to version.
type migration struct {
	version int
	name    string
	up      func(tx *gorm.DB) error
}

// migrations returns every migration in order. Append; never edit one that
// has shipped.
func migrations() []migration {
	return []migration{
		{1, "initial schema", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(models()...) }},
		{2, "task cost and session", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Task{}) }},
		{3, "where output files were saved", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&TaskFile{}) }},
		{4, "template builds and trace retention", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Template{}, &Task{}) }},
		{5, "task egress allowlist, reasoning and batch; provider organization", func(tx *gorm.DB) error {
			return tx.Migrator().AutoMigrate(&Task{}, &Provider{}, &Schedule{})
		}},
		// Interventions referenced their session without ON DELETE CASCADE,
		// so a task with a takeover or added instructions could not be
		// deleted (the cascade from tasks to sessions hit that key).
		{6, "interventions go with their session", func(tx *gorm.DB) error {
			m := tx.Migrator()
			if m.HasConstraint(&AgentSession{}, "Interventions") {
				if err := m.DropConstraint(&AgentSession{}, "Interventions"); err != nil {
					return err
				}
			}
			if err := m.CreateConstraint(&AgentSession{}, "Interventions"); err != nil {
				return err
			}
			return m.AutoMigrate(&Intervention{}) // the table was rebuilt: its index again
		}},
		{7, "task budgets", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Task{}) }},
		{8, "provider default reasoning effort", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Provider{}) }},
		{9, "credentials", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Credential{}) }},
		{10, "MCP servers, subagents and a task's skills", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&MCPServer{}, &Task{}) }},
		{11, "host folders and their writeback review", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Task{}, &WritebackItem{}) }},
		{12, "continuations, renamed and generated titles", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Task{}) }},
		{13, "webhooks", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Webhook{}) }},
		{14, "task presets", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Preset{}, &PresetFile{}) }},
		{15, "a task's own provisioning", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Task{}) }},
		// Every provider before types was OpenAI-compatible: the column's
		// default fills the rows there are; the update says so outright.
		{16, "provider types", func(tx *gorm.DB) error {
			if err := tx.Migrator().AutoMigrate(&Provider{}); err != nil {
				return err
			}
			return tx.Model(&Provider{}).Where("type IS NULL OR type = ''").Update("type", llm.TypeOpenAICompatible).Error
		}},
		{17, "where an event's action aims on the screen", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Event{}) }},
		{18, "a task resumed from its session after a restart", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Task{}) }},
		{19, "schedules with every option of a task; plan revisions and a task's checklist", func(tx *gorm.DB) error {
			return tx.Migrator().AutoMigrate(&Schedule{}, &Task{})
		}},
		{20, "paired devices", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Device{}) }},
		// A device's session is bound to the address it was paired from.
		// Those paired before had none: their sessions end here, and the
		// devices pair again.
		{21, "device sessions bound to their address", func(tx *gorm.DB) error {
			if err := tx.Migrator().AutoMigrate(&Device{}); err != nil {
				return err
			}
			return tx.Where("address = ''").Delete(&Device{}).Error
		}},
		{22, "a subagent's domain: a VM of its own or the host", func(tx *gorm.DB) error { return tx.Migrator().AutoMigrate(&Task{}) }},
	}
}

// LatestSchemaVersion is the schema version this build writes.
func LatestSchemaVersion() int {
	m := migrations()
	return m[len(m)-1].version
}

// SchemaVersion returns the version the database is at.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return currentVersion(s.db.WithContext(ctx))
}

func currentVersion(db *gorm.DB) (int, error) {
	var v int
	if err := db.Model(&SchemaVersion{}).Select("COALESCE(MAX(version), 0)").Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("read schema version: %w", classify(err))
	}
	return v, nil
}

func (s *Store) migrate(ctx context.Context) error {
	db := s.db.WithContext(ctx)
	if err := db.Migrator().AutoMigrate(&SchemaVersion{}); err != nil {
		return fmt.Errorf("create schema_versions: %w", classify(err))
	}
	latest := LatestSchemaVersion()
	for _, m := range migrations() {
		err := db.Transaction(func(tx *gorm.DB) error {
			// Read inside the write transaction: another process may have
			// migrated between our start and now.
			v, err := currentVersion(tx)
			if err != nil {
				return err
			}
			if v > latest {
				return errdefs.Unsupportedf("the database is at schema version %d, newer than this Hivecrew knows (%d): upgrade Hivecrew", v, latest)
			}
			if v >= m.version {
				return nil
			}
			if err := m.up(tx); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.version, m.name, classify(err))
			}
			if err := tx.Create(&SchemaVersion{Version: m.version, AppliedAt: time.Now().UTC()}).Error; err != nil {
				return fmt.Errorf("record migration %d: %w", m.version, classify(err))
			}
			s.log.Info("database migrated", "version", m.version, "migration", m.name)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
