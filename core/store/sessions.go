package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// CreateSession records the start of an agent session.
func (s *Store) CreateSession(ctx context.Context, sess *AgentSession) error {
	if sess.StartedAt.IsZero() {
		sess.StartedAt = time.Now().UTC()
	}
	if err := s.db.WithContext(ctx).Omit("Task", "Interventions").Create(sess).Error; err != nil {
		return fmt.Errorf("create session for task %s: %w", sess.TaskID, classify(err))
	}
	return nil
}

// EndSession records a session's end and its totals.
func (s *Store) EndSession(ctx context.Context, sess AgentSession) error {
	now := time.Now().UTC()
	err := s.db.WithContext(ctx).Model(&AgentSession{}).Where("id = ?", sess.ID).Updates(map[string]any{
		"ended_at": now, "step_count": sess.StepCount, "prompt_tokens": sess.PromptTokens,
		"completion_tokens": sess.CompletionTokens, "cost_usd": sess.CostUSD,
	}).Error
	if err != nil {
		return fmt.Errorf("end session %s: %w", sess.ID, classify(err))
	}
	return nil
}

// AddIntervention records what the user did to a running agent.
func (s *Store) AddIntervention(ctx context.Context, in Intervention) error {
	if in.CreatedAt.IsZero() {
		in.CreatedAt = time.Now().UTC()
	}
	if err := s.db.WithContext(ctx).Omit("Session").Create(&in).Error; err != nil {
		return fmt.Errorf("record intervention: %w", classify(err))
	}
	return nil
}

// SaveQuestion records a question or its answer (by ID).
func (s *Store) SaveQuestion(ctx context.Context, q Question) error {
	err := s.db.WithContext(ctx).Omit("Task").Clauses(clause.OnConflict{UpdateAll: true}).Create(&q).Error
	if err != nil {
		return fmt.Errorf("save question %s: %w", q.ID, classify(err))
	}
	return nil
}

// SavePermission records a permission request or its answer (by ID).
func (s *Store) SavePermission(ctx context.Context, p PermissionRequest) error {
	err := s.db.WithContext(ctx).Omit("Task").Clauses(clause.OnConflict{UpdateAll: true}).Create(&p).Error
	if err != nil {
		return fmt.Errorf("save permission request %s: %w", p.ID, classify(err))
	}
	return nil
}

// SaveVM inserts or updates a VM record.
func (s *Store) SaveVM(ctx context.Context, v VM) error {
	if v.CreatedAt.IsZero() {
		v.CreatedAt = time.Now().UTC()
	}
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&v).Error; err != nil {
		return fmt.Errorf("save vm %s: %w", v.ID, classify(err))
	}
	return nil
}

// DeleteVM removes a VM record; an absent one is not an error.
func (s *Store) DeleteVM(ctx context.Context, id string) error {
	if err := s.db.WithContext(ctx).Where("id = ?", id).Delete(&VM{}).Error; err != nil {
		return fmt.Errorf("delete vm %s: %w", id, classify(err))
	}
	return nil
}

// ListVMs returns every VM record.
func (s *Store) ListVMs(ctx context.Context) ([]VM, error) {
	return list[VM](s.db.WithContext(ctx), "created_at, id", "list vms")
}

// ListTemplates returns every template, by name.
func (s *Store) ListTemplates(ctx context.Context) ([]Template, error) {
	return list[Template](s.db.WithContext(ctx), "name", "list templates")
}

// GetTemplate returns a template by ID, or an error of class not found.
func (s *Store) GetTemplate(ctx context.Context, id string) (Template, error) {
	var t Template
	if err := take(s.db.WithContext(ctx), "template", id, &t); err != nil {
		return Template{}, err
	}
	return t, nil
}

// SaveTemplate inserts or updates a template.
func (s *Store) SaveTemplate(ctx context.Context, t Template) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now().UTC()
	}
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&t).Error; err != nil {
		return fmt.Errorf("save template %s: %w", t.ID, classify(err))
	}
	return nil
}
