package llm

import (
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Provider types: which protocol a provider speaks.
const (
	// TypeOpenAICompatible is any endpoint of OpenAI's chat-completions
	// protocol (or its Responses API with BackendResponses): OpenRouter,
	// Ollama, LM Studio, vLLM, gateways. The default, and what every
	// provider was before types existed.
	TypeOpenAICompatible = "openai-compatible"
	// TypeAnthropic is Anthropic's Messages API, with Claude's native
	// computer tool and extended thinking.
	TypeAnthropic = "anthropic"
	// TypeOpenAI is OpenAI's own API: the Responses API by default, with
	// the computer-use-preview model's computer tool.
	TypeOpenAI = "openai"
)

// Types are the provider types, in the order a user is offered them.
var Types = []string{TypeOpenAICompatible, TypeAnthropic, TypeOpenAI}

// The vendors' base URLs, the default of their types.
const (
	AnthropicBaseURL = "https://api.anthropic.com"
	OpenAIBaseURL    = "https://api.openai.com/v1"
)

// NormalizeType returns a provider type as stored: "" is
// TypeOpenAICompatible; an unknown type is an invalid request that names
// the known ones.
func NormalizeType(t string) (string, error) {
	switch t = strings.ToLower(strings.TrimSpace(t)); t {
	case "":
		return TypeOpenAICompatible, nil
	case TypeOpenAICompatible, TypeAnthropic, TypeOpenAI:
		return t, nil
	}
	return "", errdefs.Invalidf("provider type %q: want one of %s", t, strings.Join(Types, ", "))
}

// DefaultBaseURL is the base URL a provider of type t gets when none is
// given: the vendor's for TypeAnthropic and TypeOpenAI, "" (required)
// for TypeOpenAICompatible.
func DefaultBaseURL(t string) string {
	switch t {
	case TypeAnthropic:
		return AnthropicBaseURL
	case TypeOpenAI:
		return OpenAIBaseURL
	}
	return ""
}

// DefaultBackend is the backend mode a provider of type t uses when none
// is set: the Responses API for TypeOpenAI, Chat Completions otherwise
// (TypeAnthropic has only its Messages API and ignores it).
func DefaultBackend(t string) string {
	if t == TypeOpenAI {
		return BackendResponses
	}
	return BackendChatCompletions
}
