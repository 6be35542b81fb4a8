package responsestest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// apiError is a refusal in OpenAI's shape:
// {"error":{"message","type","param","code"}}.
type apiError struct {
	status  int
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

// invalid is a 400 invalid_request_error about param ("" is null).
func invalid(param, code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...),
		Type: "invalid_request_error", Param: orNull(param), Code: orNull(code)}
}

// notFound is a 404 invalid_request_error.
func notFound(param, code, format string, args ...any) *apiError {
	e := invalid(param, code, format, args...)
	e.status = http.StatusNotFound
	return e
}

// unsimulated refuses what the real API takes but this server does not
// simulate, saying so, so that a test is not misled.
func unsimulated(param, format string, args ...any) *apiError {
	return invalid(param, "", "responsestest does not simulate "+format, args...)
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Helpers of the common messages, worded as the real API words them.
func missing(param string) *apiError {
	return invalid(param, "missing_required_parameter", "Missing required parameter: '%s'.", param)
}

func unknownParam(param string) *apiError {
	return invalid(param, "unknown_parameter", "Unknown parameter: '%s'.", param)
}

func badValue(param, got, supported string) *apiError {
	return invalid(param, "invalid_value", "Invalid value: '%v'. Supported values are: %s.", got, supported)
}

func badType(param, want, got string) *apiError {
	return invalid(param, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.", param, want, got)
}

// statusError is the body OpenAI sends with a scripted HTTP status.
func statusError(code int) *apiError {
	e := &apiError{status: code, Type: "server_error"}
	switch code {
	case http.StatusTooManyRequests:
		e.Message, e.Type, e.Code = "Rate limit reached for requests. Please try again in 1s.", "requests", "rate_limit_exceeded"
	case http.StatusInternalServerError:
		e.Message = "The server had an error while processing your request. Sorry about that!"
	case http.StatusServiceUnavailable:
		e.Message = "The server is overloaded or not ready yet."
	case http.StatusUnauthorized:
		e.Message, e.Type, e.Code = "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
	default:
		e.Message = http.StatusText(code)
		if code < 500 {
			e.Type = "invalid_request_error"
		}
	}
	return e
}

// writeError answers with e; retryAfter, when positive, is sent as
// retry-after (whole seconds, at least 1) and retry-after-ms.
func writeError(w http.ResponseWriter, e *apiError, retryAfter time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter > 0 {
		w.Header().Set("retry-after", strconv.Itoa(max(1, int((retryAfter+time.Second-1)/time.Second))))
		w.Header().Set("retry-after-ms", strconv.FormatInt(retryAfter.Milliseconds(), 10))
	}
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}
