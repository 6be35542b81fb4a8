// Package wire holds the JSON bodies of the helper's REST API v1
// (core/api/API.md): what the API writes and the client reads. Field names are
// the API's camelCase names; times are RFC 3339 UTC in whole seconds (the
// API truncates them, as Foundation's .iso8601 decoder in Swift clients
// needs), and list fields are sent as [] rather than left out.
package wire

// Error is the body of every error answer.
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says what went wrong; Code is a stable machine-readable class.
type ErrorBody struct {
	Message string `json:"message"`
	Code    string `json:"code"`
	// Details adds context to Message, when there is any.
	Details string `json:"details,omitempty"`
}
