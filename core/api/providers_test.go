package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
	"github.com/hivecrew/hivecrew/tests/llmtest/responsestest"
)

// TestProviderTypes: a provider's type is given on create and update,
// checked, and answered; the vendor types fill their base URL and API; a
// new type takes the new vendor's address where the old one's was; a
// body that gets the type wrong is a 400 that says what is wrong.
func TestProviderTypes(t *testing.T) {
	h := startHelper(t, nil)
	provider := func(out []byte) wire.Provider {
		t.Helper()
		var p wire.Provider
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("provider %s: %v", out, err)
		}
		return p
	}
	errorSays := func(out []byte, want string) {
		t.Helper()
		var e wire.Error
		json.Unmarshal(out, &e)
		if !strings.Contains(e.Error.Message, want) {
			t.Errorf("error %q, want it to say %q", e.Error.Message, want)
		}
	}

	// No type: openai-compatible, as every provider was before types; the
	// field is in the answer.
	out := h.expect(201, "POST", "/api/v1/providers", map[string]any{"displayName": "Local", "baseURL": h.llm.URL})
	if p := provider(out); p.Type != "openai-compatible" || p.BackendMode != "chat_completions" || !strings.Contains(string(out), `"type":"openai-compatible"`) {
		t.Fatalf("a provider without a type: %s", out)
	}
	errorSays(h.expect(400, "POST", "/api/v1/providers", map[string]any{"displayName": "NoURL", "type": "openai-compatible"}),
		"an openai-compatible provider needs a baseURL")

	// The vendor types: their base URL and API when none is given.
	claude := provider(h.expect(201, "POST", "/api/v1/providers", map[string]any{"displayName": "Claude", "type": "Anthropic", "apiKey": "sk-ant-test"}))
	if claude.Type != "anthropic" || claude.BaseURL != "https://api.anthropic.com" || claude.BackendMode != "chat_completions" || !claude.HasAPIKey {
		t.Fatalf("anthropic = %+v", claude)
	}
	gpt := provider(h.expect(201, "POST", "/api/v1/providers", map[string]any{"displayName": "OpenAI", "type": "openai", "baseURL": ""}))
	if gpt.Type != "openai" || gpt.BaseURL != "https://api.openai.com/v1" || gpt.BackendMode != "responses" {
		t.Fatalf("openai = %+v", gpt)
	}
	if got := provider(h.expect(200, "GET", "/api/v1/providers/Claude", nil)); got.Type != "anthropic" {
		t.Fatalf("GET anthropic = %+v", got)
	}

	// What a body can get wrong.
	errorSays(h.expect(400, "POST", "/api/v1/providers", map[string]any{"displayName": "G", "type": "gemini", "baseURL": "https://g.example"}),
		`provider type "gemini": want one of openai-compatible, anthropic, openai`)
	errorSays(h.expect(400, "POST", "/api/v1/providers", `{"displayName":"N","type":5,"baseURL":"https://n.example"}`), `field "type" has the wrong type`)
	errorSays(h.expect(400, "PATCH", "/api/v1/providers/Claude", `{"type":["openai"]}`), `field "type" has the wrong type`)
	errorSays(h.expect(400, "POST", "/api/v1/providers", map[string]any{"displayName": "R", "type": "anthropic", "backendMode": "responses"}),
		"speaks Anthropic's Messages API only")
	errorSays(h.expect(400, "POST", "/api/v1/providers", map[string]any{"displayName": "T", "typ": "anthropic"}), `did you mean "type"`)
	var list wire.ProviderList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/providers", nil), &list)
	if len(list.Providers) != 3 {
		t.Fatalf("refused providers were stored: %+v", list.Providers)
	}

	// Changing the type: the vendor's address and the API follow it.
	gpt = provider(h.expect(200, "PATCH", "/api/v1/providers/"+claude.ID, map[string]any{"type": "openai"}))
	if gpt.Type != "openai" || gpt.BaseURL != "https://api.openai.com/v1" || gpt.BackendMode != "responses" || gpt.DisplayName != "Claude" || !gpt.HasAPIKey {
		t.Fatalf("anthropic made openai = %+v", gpt)
	}
	errorSays(h.expect(400, "PATCH", "/api/v1/providers/"+claude.ID, map[string]any{"type": "openai-compatible"}), "needs a baseURL")
	compat := provider(h.expect(200, "PATCH", "/api/v1/providers/"+claude.ID, map[string]any{"type": "openai-compatible", "baseURL": h.llm.URL + "/"}))
	if compat.Type != "openai-compatible" || compat.BaseURL != h.llm.URL || compat.BackendMode != "chat_completions" {
		t.Fatalf("openai made openai-compatible = %+v", compat)
	}
	// An address of one's own stays; an unchanged type changes nothing.
	mine := provider(h.expect(200, "PATCH", "/api/v1/providers/"+claude.ID, map[string]any{"type": "anthropic"}))
	if mine.Type != "anthropic" || mine.BaseURL != h.llm.URL || mine.BackendMode != "chat_completions" {
		t.Fatalf("a gateway made anthropic = %+v", mine)
	}
	if p := provider(h.expect(200, "PATCH", "/api/v1/providers/"+gpt.ID, map[string]any{"type": "anthropic", "defaultModelId": "claude-x"})); p.BaseURL != h.llm.URL || p.DefaultModelID != "claude-x" {
		t.Fatalf("patch with the same type = %+v", p)
	}
	// Clearing an anthropic provider's address gives it its vendor's.
	if p := provider(h.expect(200, "PATCH", "/api/v1/providers/"+claude.ID, map[string]any{"clearBaseURL": true})); p.BaseURL != "https://api.anthropic.com" {
		t.Fatalf("cleared base URL = %+v", p)
	}
	// An openai provider may use Chat Completions, and keeps it while its
	// type stays.
	if p := provider(h.expect(200, "PATCH", "/api/v1/providers/OpenAI", map[string]any{"backendMode": "chat_completions"})); p.Type != "openai" || p.BackendMode != "chat_completions" {
		t.Fatalf("openai on chat completions = %+v", p)
	}
}

// TestProviderTypesTestAndListModels: `providers test` and `providers
// models` speak each type's protocol: Anthropic's GET /v1/models (with
// the key Anthropic's way), and the Responses provider's /models.
func TestProviderTypesTestAndListModels(t *testing.T) {
	h := startHelper(t, nil)
	claude := claudetest.New(t)
	claude.Key = "sk-ant-test"
	h.expect(201, "POST", "/api/v1/providers", map[string]any{"displayName": "Claude", "type": "anthropic", "baseURL": claude.URL, "apiKey": "sk-ant-test", "defaultModelId": "claude-sonnet-4-5"})
	out := h.expect(200, "GET", "/api/v1/providers/Claude/models", nil)
	if !strings.Contains(string(out), `"claude-sonnet-4-5"`) || !strings.Contains(string(out), `"claude-opus-4-5"`) {
		t.Fatalf("Claude's models: %s", out)
	}
	if out := h.expect(200, "POST", "/api/v1/providers/Claude/test", nil); !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("Claude's test: %s", out)
	}
	// A wrong key: the test says so.
	h.expect(200, "PATCH", "/api/v1/providers/Claude", map[string]any{"apiKey": "sk-ant-wrong"})
	if out := h.expect(200, "POST", "/api/v1/providers/Claude/test", nil); !strings.Contains(string(out), `"ok":false`) || !strings.Contains(string(out), "refused the API key") {
		t.Fatalf("Claude's test with a wrong key: %s", out)
	}

	gpt := responsestest.New(t)
	h.expect(201, "POST", "/api/v1/providers", map[string]any{"displayName": "OpenAI", "type": "openai", "baseURL": gpt.URL, "apiKey": "sk-test", "defaultModelId": "computer-use-preview"})
	if out := h.expect(200, "GET", "/api/v1/providers/OpenAI/models", nil); !strings.Contains(string(out), `"computer-use-preview"`) {
		t.Fatalf("OpenAI's models: %s", out)
	}
	if out := h.expect(200, "POST", "/api/v1/providers/OpenAI/test", nil); !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("OpenAI's test: %s", out)
	}
}
