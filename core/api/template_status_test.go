package api_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/store"
)

// TestTaskOnATemplateThatIsNotReady: a task naming a template that is
// still building, or whose build failed, is refused with the reason.
func TestTaskOnATemplateThatIsNotReady(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	st, err := store.Open(context.Background(), h.paths.Database(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tmpl := range []store.Template{
		{ID: "busy", Name: "Busy", OS: "linux", Kind: "rootfs", Status: store.TemplateBuilding},
		{ID: "broken", Name: "Broken", OS: "linux", Kind: "rootfs", Status: store.TemplateFailed, StatusReason: "debootstrap failed"},
	} {
		if err := st.SaveTemplate(context.Background(), tmpl); err != nil {
			t.Fatal(err)
		}
	}
	if out := h.expect(409, "POST", "/api/v1/tasks", map[string]any{"description": "x", "templateId": "busy"}); !strings.Contains(string(out), "not ready yet") {
		t.Fatalf("building template: %s", out)
	}
	if out := h.expect(409, "POST", "/api/v1/tasks", map[string]any{"description": "x", "templateId": "broken"}); !strings.Contains(string(out), "debootstrap failed") {
		t.Fatalf("failed template: %s", out)
	}
}
