package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	openai "github.com/sashabaranov/go-openai"
)

// explain reads what a provider said of a failure from the error types of
// either client: go-openai's *APIError (an error answer, or one sent inside
// a stream: streamError) and the Anthropic SDK's *Error (an error answer,
// or an `error` event of a stream, which came under status 200).
func explain(err error) (apiError, bool) {
	var oa *openai.APIError
	if errors.As(err, &oa) {
		a := apiError{status: oa.HTTPStatusCode, message: oa.Message}
		if oa.Code != nil {
			a.code = fmt.Sprint(oa.Code)
		}
		return a, true
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		kind := string(ae.Type())
		a := apiError{status: ae.StatusCode, code: kind, message: ae.Message}
		if a.status == http.StatusOK || a.status == 0 {
			a.status = anthropicStatus[kind]
			if a.status == 0 {
				a.status = http.StatusInternalServerError
			}
		}
		if a.message == "" {
			a.message = kind
		}
		return a, true
	}
	return apiError{}, false
}

// anthropicStatus is the HTTP status each of Anthropic's error types comes
// with (its errors page), for the same error sent inside a stream.
var anthropicStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// wrongProtocol is the final error of an answer in another protocol than
// the provider's type speaks: a provider of one type pointed at another's
// endpoint (an Anthropic key at an OpenAI-compatible gateway, say). Asking
// again gets the same; the user fixes the provider and resumes.
func wrongProtocol(typ, got string) error {
	return &Error{Message: fmt.Sprintf("the provider answered in another protocol (%s) than its type, %s, speaks: check the provider's type and base URL in Settings › Providers", got, typ)}
}

// protocolOf names the protocol an answer's JSON object is in, by the
// fields each protocol's answers and stream events have; "" when none.
func protocolOf(probe answerProbe) string {
	switch {
	case probe.Choices != nil, probe.Object == "chat.completion", probe.Object == "chat.completion.chunk":
		return "OpenAI chat completions"
	case probe.Object == "response", strings.HasPrefix(probe.Type, "response."):
		return "OpenAI Responses"
	case probe.Type == "message", probe.Type == "message_start", probe.Type == "content_block_start", probe.Type == "ping":
		return "Anthropic Messages"
	}
	return ""
}

// answerProbe is what protocolOf reads of an answer.
type answerProbe struct {
	Type    string          `json:"type"`
	Object  string          `json:"object"`
	Choices json.RawMessage `json:"choices"`
}
