package daemon

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/secrets"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/webhooks"
)

// TestWebhookLoader: webhooks come with their secrets and events; one
// whose secret the secret store lost is left out and logged, not sent
// unsigned, and the others are still sent. A notice becomes a payload
// with the result of an ended task only.
func TestWebhookLoader(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.Context(), filepath.Join(dir, "hivecrew.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sec, err := secrets.NewFile(filepath.Join(dir, "secrets.json"), log)
	if err != nil {
		t.Fatal(err)
	}
	signed := store.Webhook{Name: "signed", URL: "https://a.example/h", Format: "json", Events: []string{"task.ended"}, HasSecret: true, Enabled: true}
	lost := store.Webhook{Name: "lost", URL: "https://b.example/h", Format: "slack", HasSecret: true, Enabled: true}
	off := store.Webhook{Name: "off", URL: "https://c.example/h", Format: "discord"}
	for _, w := range []*store.Webhook{&signed, &lost, &off} {
		if err := st.CreateWebhook(t.Context(), w); err != nil {
			t.Fatal(err)
		}
	}
	if err := sec.Set(signed.SecretRef(), "k1"); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	hooks, err := webhookLoader(st, sec, slog.New(slog.NewTextHandler(&logged, nil)))(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 2 || hooks[0].Name != "off" || !hooks[0].Disabled || hooks[0].Format != webhooks.Discord ||
		hooks[1].Name != "signed" || hooks[1].Secret != "k1" || len(hooks[1].Events) != 1 || hooks[1].Events[0] != webhooks.TaskEnded {
		t.Fatalf("hooks = %+v", hooks)
	}
	if !strings.Contains(logged.String(), "webhook=lost") {
		t.Fatalf("the lost secret was not logged: %s", logged.String())
	}

	sum, ok := "Painted it.", true
	p := webhookPayload(orchestrator.Notice{Event: orchestrator.NoticeEnded,
		Task: store.Task{ID: "t", Title: "Paint", Status: store.StatusCompleted, ResultSummary: &sum, WasSuccessful: &ok}})
	if p.Event != webhooks.TaskEnded || p.Task.Result != sum || p.Task.Status != "completed" || !*p.Task.WasSuccessful {
		t.Fatalf("ended payload %+v", p)
	}
	q := webhookPayload(orchestrator.Notice{Event: orchestrator.NoticeQuestion, Task: store.Task{ID: "t", Status: store.StatusRunning, ResultSummary: &sum},
		Question: &store.Question{ID: "q", Question: "Which?", Options: []string{"a"}}})
	if q.Task.Result != "" || q.Question == nil || q.Question.Text != "Which?" || q.Permission != nil {
		t.Fatalf("question payload %+v", q)
	}
}
