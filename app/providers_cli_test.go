package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestProvidersTypes: an anthropic provider is added without a base URL
// (it gets Anthropic's), listed and shown with its type; edit changes its
// type (the vendor's address follows) and then to an OpenAI-compatible
// endpoint of one's own, which then answers its test. An unknown type is
// refused with the known ones, and nothing is stored.
func TestProvidersTypes(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	llm := llmtest.New(t)
	r := h.ok("providers", "add", "--name", "Claude", "--type", "anthropic", "--api-key", "sk-ant-test-5678", "--model", "claude-x")
	if !strings.Contains(r.stdout, "Added provider Claude") || !strings.Contains(r.stdout, "anthropic at https://api.anthropic.com") {
		t.Fatalf("add: %s", r)
	}
	ls := h.ok("providers", "ls")
	lines := strings.Split(strings.TrimSpace(ls.stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "TYPE") {
		t.Fatalf("ls: %s", ls)
	}
	if f := strings.Fields(lines[1]); len(f) < 4 || f[0] != "Claude" || f[2] != "anthropic" || f[3] != "https://api.anthropic.com" {
		t.Fatalf("ls row %q: want Claude, its id, anthropic, https://api.anthropic.com", lines[1])
	}
	show := h.ok("providers", "show", "claude")
	for _, want := range []string{`Provider "Claude"`, "Type:", "anthropic", "Base URL:", "https://api.anthropic.com", "API:", "messages", "API key:", "set", "Model:", "claude-x"} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, show.stdout)
		}
	}
	var p wire.Provider
	decodeOne(t, h.ok("providers", "show", "Claude", "--json").stdout, &p)
	if p.Type != "anthropic" || p.BaseURL != "https://api.anthropic.com" || !p.HasAPIKey {
		t.Fatalf("show --json: %+v", p)
	}
	for _, out := range []result{r, ls, show} {
		if strings.Contains(out.stdout+out.stderr, "5678") {
			t.Fatalf("the API key was printed: %s", out)
		}
	}

	// Another vendor: its address and API follow the type.
	if r := h.ok("providers", "edit", "Claude", "--type", "openai"); !strings.Contains(r.stdout, "openai at https://api.openai.com/v1") {
		t.Fatalf("edit --type openai: %s", r)
	}
	if p, _ := h.c.Provider(context.Background(), "Claude"); p.Type != "openai" || p.BackendMode != "responses" || p.DefaultModelID != "claude-x" {
		t.Fatalf("after edit --type openai: %+v", p)
	}
	// An OpenAI-compatible provider needs an address of its own.
	if r := h.cli("providers", "edit", "Claude", "--type", "openai-compatible"); r.code != 1 || !strings.Contains(r.stderr, "needs a baseURL") {
		t.Fatalf("edit to openai-compatible without a base URL: %s", r)
	}
	h.ok("providers", "edit", "Claude", "--type", "openai-compatible", "--base-url", llm.URL, "--model", "scripted", "--name", "Local")
	if tr := h.ok("providers", "test", "Local"); !strings.HasPrefix(tr.stdout, "OK (") {
		t.Fatalf("test of the edited provider: %s", tr)
	}
	if p, _ := h.c.Provider(context.Background(), "Local"); p.Type != "openai-compatible" || p.BaseURL != llm.URL || p.BackendMode != "chat_completions" {
		t.Fatalf("after edit to openai-compatible: %+v", p)
	}

	// Refused before anything is stored.
	r = h.cli("providers", "add", "--name", "G", "--type", "gemini", "--base-url", "https://g.example")
	if r.code != 2 || !strings.Contains(r.stderr, `--type "gemini": want one of openai-compatible, anthropic, openai`) {
		t.Fatalf("add --type gemini: %s", r)
	}
	r = h.cli("providers", "add", "--name", "NoURL")
	if r.code != 2 || !strings.Contains(r.stderr, "needs --base-url for an openai-compatible provider") {
		t.Fatalf("add without a base URL: %s", r)
	}
	if ps, _ := h.c.Providers(context.Background()); len(ps) != 1 {
		t.Fatalf("providers = %+v", ps)
	}
}

// TestProvidersWorker: the worker model is shown, set to a provider's
// model (found by any case of its name, stored as it is named), refused
// for a provider that does not exist or without its model, and turned off.
func TestProvidersWorker(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	if r := h.ok("providers", "worker"); !strings.Contains(r.stdout, "No worker model") {
		t.Fatalf("worker before any: %s", r)
	}
	h.ok("providers", "add", "--name", "Claude", "--type", "anthropic", "--api-key", "sk-ant-test-5678", "--model", "claude-x")
	if r := h.ok("providers", "worker", "claude", "claude-haiku"); !strings.Contains(r.stdout, "Worker model: claude-haiku of provider Claude") {
		t.Fatalf("worker set: %s", r)
	}
	var s map[string]string
	decodeOne(t, h.ok("providers", "worker", "--json").stdout, &s)
	if s["workerProviderName"] != "Claude" || s["workerModelId"] != "claude-haiku" {
		t.Fatalf("worker --json: %v", s)
	}
	if r := h.cli("providers", "worker", "Nope", "m"); r.code != 1 || !strings.Contains(r.stderr, "Nope") {
		t.Fatalf("worker of a provider that does not exist: %s", r)
	}
	if r := h.cli("providers", "worker", "Claude"); r.code != 2 || !strings.Contains(r.stderr, "NAME MODEL") {
		t.Fatalf("worker without a model: %s", r)
	}
	if r := h.ok("providers", "worker", "--off"); !strings.Contains(r.stdout, "No worker model") {
		t.Fatalf("worker --off: %s", r)
	}
}
