package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
)

// TestProviderTypeDefaults: a provider's type fills what it leaves out
// (the vendor's base URL, the type's API) and refuses what it cannot use.
func TestProviderTypeDefaults(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	ok := map[string]struct {
		in                    Provider
		typ, baseURL, backend string
	}{
		"no type":                     {Provider{BaseURL: "http://localhost:11434/v1"}, "openai-compatible", "http://localhost:11434/v1", "chat_completions"},
		"compatible with responses":   {Provider{Type: "openai-compatible", BaseURL: "https://gw.example/v1", BackendMode: "responses"}, "openai-compatible", "https://gw.example/v1", "responses"},
		"anthropic, nothing else":     {Provider{Type: "anthropic"}, "anthropic", "https://api.anthropic.com", "chat_completions"},
		"anthropic, spelled loosely":  {Provider{Type: " Anthropic "}, "anthropic", "https://api.anthropic.com", "chat_completions"},
		"anthropic through a gateway": {Provider{Type: "anthropic", BaseURL: "https://gw.example/anthropic"}, "anthropic", "https://gw.example/anthropic", "chat_completions"},
		"openai, nothing else":        {Provider{Type: "openai"}, "openai", "https://api.openai.com/v1", "responses"},
		"openai on chat completions":  {Provider{Type: "openai", BackendMode: "chat_completions"}, "openai", "https://api.openai.com/v1", "chat_completions"},
	}
	for name, c := range ok {
		p := c.in
		p.DisplayName = name
		if err := s.CreateProvider(ctx, &p); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got, err := s.FindProvider(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Type != c.typ || got.BaseURL != c.baseURL || got.BackendMode != c.backend {
			t.Errorf("%s: stored type %q, base URL %q, backend %q; want %q, %q, %q", name, got.Type, got.BaseURL, got.BackendMode, c.typ, c.baseURL, c.backend)
		}
	}
	bad := map[string]struct {
		in   Provider
		want string
	}{
		"unknown type":             {Provider{Type: "gemini", BaseURL: "https://x.example"}, `provider type "gemini": want one of openai-compatible, anthropic, openai`},
		"compatible without URL":   {Provider{}, "an openai-compatible provider needs a baseURL"},
		"anthropic with responses": {Provider{Type: "anthropic", BackendMode: "responses"}, "speaks Anthropic's Messages API only"},
		"openai with magic":        {Provider{Type: "openai", BackendMode: "magic"}, `backendMode "magic"`},
	}
	for name, c := range bad {
		p := c.in
		p.DisplayName = name
		err := s.CreateProvider(ctx, &p)
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want invalid saying %q", name, err, c.want)
		}
	}
}

// TestProviderTypeMigration: a database of schema 15, whose providers
// table has no type, is migrated; its providers read openai-compatible and
// keep everything else.
func TestProviderTypeMigration(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	execAll(t, s,
		"ALTER TABLE providers DROP COLUMN type",
		"DELETE FROM schema_versions WHERE version >= 16",
		"INSERT INTO providers (id, display_name, base_url, backend_mode, auth_mode, is_default, default_model_id, created_at) "+
			"VALUES ('p1', 'Local', 'http://localhost:11434/v1', 'responses', 'api_key', 1, 'qwen', '2026-01-02 03:04:05')")
	if s.db.Migrator().HasColumn(&Provider{}, "Type") {
		t.Fatal("the schema 15 table has a type column: the test does not rebuild the old schema")
	}
	s2 := reopen(t, s, path)
	p, err := s2.FindProvider(ctx, "Local")
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != llm.TypeOpenAICompatible || p.BaseURL != "http://localhost:11434/v1" || p.BackendMode != "responses" || !p.IsDefault || p.DefaultModelID != "qwen" {
		t.Fatalf("migrated provider = %+v", p)
	}
	// It stays editable, and its type can change.
	p, err = s2.UpdateProvider(ctx, p.ID, func(p *Provider) error { p.Type = llm.TypeOpenAI; return nil })
	if err != nil || p.Type != llm.TypeOpenAI {
		t.Fatalf("change the type: %+v, %v", p, err)
	}
	if err := s2.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}
