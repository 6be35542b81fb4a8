package llm

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// ModelInfo is a model the provider offers.
type ModelInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// ContextLength is the context window in tokens, 0 when the provider
	// does not say.
	ContextLength int
	// Reasoning is how the model's reasoning is controlled.
	Reasoning ReasoningControl
	// Vision says whether the model takes images, when the provider says
	// (OpenRouter's architecture.input_modalities); nil when it does not.
	Vision *bool
}

// ReasoningControl says how a model's reasoning is controlled: Kind is "none",
// "toggle" (on or off) or "effort" (one of Efforts).
type ReasoningControl struct {
	Kind    string
	Efforts []string
}

// modelEntry is one model of a /models answer. OpenAI sends id only;
// OpenRouter and others add a name, the context window (under one of
// several names) and the request parameters the model takes.
type modelEntry struct {
	ID                  string   `json:"id"`
	Name                string   `json:"name"`
	ContextLength       int      `json:"context_length"`
	ContextWindow       int      `json:"context_window"`
	MaxContextLength    int      `json:"max_context_length"`
	SupportedParameters []string `json:"supported_parameters"`
	Architecture        *struct {
		InputModalities []string `json:"input_modalities"`
	} `json:"architecture"`
}

// Models lists the provider's models, by id.
func (c *Client) Models(ctx context.Context) ([]ModelInfo, error) {
	var out []ModelInfo
	err := c.do(ctx, func(actx context.Context) error {
		var err error
		out, err = c.be.models(actx)
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// openAIModels lists an OpenAI provider's models (GET /models), read for
// the fields OpenRouter and others add (name, context window, supported
// parameters, input modalities). One attempt: Models retries.
func (c *Client) openAIModels(ctx context.Context) ([]ModelInfo, error) {
	var list struct {
		Data []modelEntry `json:"data"`
	}
	if err := c.getJSON(ctx, "/models", &list); err != nil {
		return nil, err
	}
	out := make([]ModelInfo, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID == "" {
			continue
		}
		info := ModelInfo{ID: m.ID, Name: cmp.Or(m.Name, m.ID),
			ContextLength: cmp.Or(m.ContextLength, m.ContextWindow, m.MaxContextLength), Reasoning: reasoningOf(m)}
		if m.Architecture != nil && m.Architecture.InputModalities != nil {
			v := slices.Contains(m.Architecture.InputModalities, "image")
			info.Vision = &v
		}
		out = append(out, info)
	}
	return out, nil
}

// effortModels are model families known to take reasoning_effort, for
// providers whose /models does not list supported parameters (OpenAI).
var effortModels = []string{"o1", "o3", "o4", "gpt-5", "gpt-oss"}

func reasoningOf(m modelEntry) ReasoningControl {
	effort := ReasoningControl{Kind: "effort", Efforts: []string{"low", "medium", "high"}}
	if m.SupportedParameters != nil {
		switch {
		case slices.Contains(m.SupportedParameters, "reasoning_effort") || slices.Contains(m.SupportedParameters, "reasoning"):
			return effort
		case slices.Contains(m.SupportedParameters, "include_reasoning"):
			return ReasoningControl{Kind: "toggle", Efforts: []string{}}
		}
		return ReasoningControl{Kind: "none", Efforts: []string{}}
	}
	id := strings.ToLower(m.ID[strings.LastIndex(m.ID, "/")+1:])
	for _, f := range effortModels {
		if id == f || strings.HasPrefix(id, f+"-") || strings.HasPrefix(id, f+".") {
			return effort
		}
	}
	return ReasoningControl{Kind: "none", Efforts: []string{}}
}

// Test checks that the endpoint answers and accepts the key, and that it
// offers the client's model when it lists models.
func (c *Client) Test(ctx context.Context) error {
	models, err := c.Models(ctx)
	if err != nil {
		return err
	}
	if len(models) > 0 && !slices.ContainsFunc(models, func(m ModelInfo) bool { return m.ID == c.cfg.Model }) {
		return errdefs.NotFoundf("the provider answers but does not list model %q", c.cfg.Model)
	}
	return nil
}
