package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
)

// llmFor returns the LLM client of a task's provider and model.
func (o *Orchestrator) llmFor(ctx context.Context, t store.Task, settings config.Settings) (*llm.Client, error) {
	p, err := o.cfg.Store.FindProvider(ctx, t.ProviderName)
	if err != nil {
		return nil, fmt.Errorf("LLM provider %q: %w", t.ProviderName, err)
	}
	c, err := o.clientFor(p, t.ModelID, settings, reasoningEffort(t.ReasoningEnabled, t.ReasoningEffort, p.DefaultReasoningEffort))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// reasoningEffort is the reasoning_effort to ask for: the task's effort,
// else its provider's default (when the task did not turn reasoning off),
// else "medium" when reasoning is on without one. Nothing said sends none
// (the model's default: a model that does not reason refuses the
// parameter).
func reasoningEffort(enabled *bool, effort, providerDefault string) string {
	switch {
	case enabled != nil && !*enabled:
		return ""
	case effort != "":
		return effort
	case providerDefault != "":
		return providerDefault
	case enabled != nil:
		return "medium"
	}
	return ""
}

// clientFor returns a client of provider p for a model.
func (o *Orchestrator) clientFor(p store.Provider, model string, settings config.Settings, effort string) (*llm.Client, error) {
	key, err := o.cfg.APIKey(p)
	if err != nil {
		return nil, fmt.Errorf("API key of provider %s: %w", p.DisplayName, err)
	}
	cfg := llm.Config{Type: p.Type, BaseURL: p.BaseURL, APIKey: key, Model: model, Prices: llm.PricesFrom(settings.ModelPrices), BackoffBase: o.cfg.LLMBackoff,
		Organization: p.OrganizationID, ReasoningEffort: effort, Backend: p.BackendMode,
		CacheMarks: llm.AcceptsCacheMarks(p.BaseURL, model)}
	if p.TimeoutSeconds > 0 {
		cfg.Timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	return llm.New(cfg)
}

// template resolves a task's template (or the default) to its record.
func (o *Orchestrator) template(ctx context.Context, id string, settings config.Settings) (store.Template, error) {
	if id == "" {
		id = settings.DefaultTemplateID
	}
	if id == "" {
		ts, err := o.cfg.Store.ListTemplates(ctx)
		if err != nil {
			return store.Template{}, err
		}
		for _, t := range ts {
			if t.IsDefault || id == "" {
				id = t.ID
			}
		}
	}
	if id == "" {
		return store.Template{}, errdefs.NotFoundf("no VM template exists yet: create one with `hivecrew templates create`")
	}
	t, err := o.cfg.Store.GetTemplate(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return store.Template{}, errdefs.NotFoundf("VM template %q does not exist (%s)", id, o.templateNames(ctx))
	}
	if err != nil {
		return store.Template{}, err
	}
	if err := usable(t); err != nil {
		return store.Template{}, err
	}
	return t, nil
}

// templateNames says which templates there are, for an error that names
// one that is not.
func (o *Orchestrator) templateNames(ctx context.Context) string {
	ts, err := o.cfg.Store.ListTemplates(ctx)
	if err != nil || len(ts) == 0 {
		return "there are no templates yet: create one with `hivecrew templates create`"
	}
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		n := t.ID
		if t.Name != "" && t.Name != t.ID {
			n += " (" + t.Name + ")"
		}
		if t.IsDefault {
			n += ", the default"
		}
		names = append(names, n)
	}
	return "the templates are: " + strings.Join(names, "; ")
}

// usable refuses a template that is still being built or set up, or whose
// build failed.
func usable(t store.Template) error {
	switch t.Status {
	case "", store.TemplateReady:
		return nil
	case store.TemplateFailed:
		return errdefs.Conflictf("VM template %q failed to build (%s): rebuild it or pick another (`hivecrew templates ls`)", t.Name, t.StatusReason)
	}
	return errdefs.Conflictf("VM template %q is not ready yet (%s): wait for it, or pick another", t.Name, t.Status)
}

// windowCache remembers what providers' model lists say of context
// windows, by provider and model, for windowTTL.
type windowCache struct {
	mu sync.Mutex
	m  map[string]cachedWindow
}

type cachedWindow struct {
	tokens int
	// noVision: the provider says the model takes no images.
	noVision bool
	at       time.Time
}

// windowTTL is how long a provider's figure is reused.
const windowTTL = 10 * time.Minute

// modelFacts returns what a task's model list says of a task's model: its
// context window (what the list says, else a known family's, else
// llm.DefaultContextTokens: llm.ContextWindow), and whether it takes no
// images. The list is asked at most every windowTTL, within 5 s.
func (o *Orchestrator) modelFacts(ctx context.Context, provider string, c *llm.Client) (window int, noVision bool) {
	key := provider + "\x00" + c.Model()
	o.windows.mu.Lock()
	w, ok := o.windows.m[key]
	o.windows.mu.Unlock()
	if ok && time.Since(w.at) < windowTTL {
		return llm.ContextWindow(c.Model(), w.tokens), w.noVision
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w = cachedWindow{at: time.Now()}
	if models, err := c.Models(lctx); err == nil {
		for _, m := range models {
			if m.ID == c.Model() {
				w.tokens, w.noVision = m.ContextLength, m.Vision != nil && !*m.Vision
			}
		}
	}
	o.windows.mu.Lock()
	if o.windows.m == nil {
		o.windows.m = map[string]cachedWindow{}
	}
	o.windows.m[key] = w
	o.windows.mu.Unlock()
	return llm.ContextWindow(c.Model(), w.tokens), w.noVision
}
