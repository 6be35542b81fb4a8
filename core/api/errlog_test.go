package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClientThatLeftIsNotAnError: a failure of a request whose client went
// away (a closed tab, a stopped stream) is logged at debug level, not as
// an ERROR; the same failure for a client still there is.
func TestClientThatLeftIsNotAnError(t *testing.T) {
	var log bytes.Buffer
	a := &API{cfg: Config{Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gone := httptest.NewRequest("GET", "/api/v1/tasks/x/stream", nil).WithContext(ctx)
	a.writeErr(httptest.NewRecorder(), gone, errors.New("write: broken pipe"))
	if log.Len() != 0 {
		t.Fatalf("a client that left was logged: %s", log.String())
	}
	here := httptest.NewRequest("GET", "/api/v1/tasks/x/stream", nil)
	a.writeErr(httptest.NewRecorder(), here, errors.New("disk on fire"))
	if !strings.Contains(log.String(), "level=ERROR") {
		t.Fatalf("a real failure was not logged as an error: %q", log.String())
	}
}
