package wire

import (
	"time"
)

// Provider is an LLM provider; its API key is never sent back.
type Provider struct {
	ID              string  `json:"id"`
	DisplayName     string  `json:"displayName"`
	BaseURL         string  `json:"baseURL"`
	BackendMode     string  `json:"backendMode"`
	AuthMode        string  `json:"authMode"`
	IsDefault       bool    `json:"isDefault"`
	HasAPIKey       bool    `json:"hasAPIKey"`
	OrganizationID  string  `json:"organizationId,omitempty"`
	DefaultModelID  string  `json:"defaultModelId,omitempty"`
	TimeoutInterval float64 `json:"timeoutInterval,omitempty"`
	// DefaultReasoningEffort is the effort of its tasks that ask for none
	// (extension).
	DefaultReasoningEffort string `json:"defaultReasoningEffort,omitempty"`
	// Type is the protocol it speaks: openai-compatible, anthropic or
	// openai (extension).
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
}

// ProviderInput is the body of POST /providers and PATCH /providers/:id
// (all fields optional there). APIKey is write-only. The Clear fields
// (PATCH) remove the key, the base URL or the organization.
type ProviderInput struct {
	DisplayName         *string  `json:"displayName,omitempty"`
	BaseURL             *string  `json:"baseURL,omitempty"`
	ClearBaseURL        *bool    `json:"clearBaseURL,omitempty"`
	APIKey              *string  `json:"apiKey,omitempty"`
	ClearAPIKey         *bool    `json:"clearAPIKey,omitempty"`
	OrganizationID      *string  `json:"organizationId,omitempty"`
	ClearOrganizationID *bool    `json:"clearOrganizationId,omitempty"`
	BackendMode         *string  `json:"backendMode,omitempty"`
	AuthMode            *string  `json:"authMode,omitempty"`
	IsDefault           *bool    `json:"isDefault,omitempty"`
	DefaultModelID      *string  `json:"defaultModelId,omitempty"`
	TimeoutInterval     *float64 `json:"timeoutInterval,omitempty"`
	// DefaultReasoningEffort ("" clears it) is an extension.
	DefaultReasoningEffort *string `json:"defaultReasoningEffort,omitempty"`
	// Type (extension) is openai-compatible (the default), anthropic or
	// openai. Changing it moves a base URL that was the old type's
	// vendor default to the new type's, and backendMode, unless given, to
	// the new type's default.
	Type *string `json:"type,omitempty"`
}

// ProviderList is the answer of GET /providers.
type ProviderList struct {
	Providers []Provider `json:"providers"`
}

// Model is one model a provider offers.
type Model struct {
	ID                  string              `json:"id"`
	Name                string              `json:"name"`
	ContextLength       *int                `json:"contextLength,omitempty"`
	ReasoningCapability ReasoningCapability `json:"reasoningCapability"`
	// SupportsVision says whether the model takes images, when the
	// provider says (extension).
	SupportsVision *bool `json:"supportsVision,omitempty"`
}

// ReasoningCapability says how a model's reasoning is controlled: Kind
// none, toggle (on or off) or effort (SupportedEfforts).
type ReasoningCapability struct {
	Kind             string   `json:"kind"`
	SupportedEfforts []string `json:"supportedEfforts"`
	DefaultEffort    *string  `json:"defaultEffort,omitempty"`
	DefaultEnabled   bool     `json:"defaultEnabled"`
}

// ModelList is the answer of GET /providers/:id/models.
type ModelList struct {
	Models []Model `json:"models"`
}

// ProviderTest is the answer of POST /providers/:id/test (extension).
type ProviderTest struct {
	OK        bool    `json:"ok"`
	Message   string  `json:"message"`
	LatencyMs float64 `json:"latencyMs"`
}
