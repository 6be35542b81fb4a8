package faults

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/webhooks"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// hookServer is a webhook receiver under test: it answers 500 to the
// first request of each event and 200 to the next, and records what it
// got.
type hookServer struct {
	*httptest.Server
	// mu guards got.
	mu  sync.Mutex
	got []hookRequest
}

type hookRequest struct {
	status int
	header http.Header
	body   []byte
}

func newHookServer(t *testing.T) *hookServer {
	s := &hookServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		defer s.mu.Unlock()
		status := http.StatusInternalServerError
		for _, g := range s.got {
			if g.header.Get(webhooks.EventHeader) == r.Header.Get(webhooks.EventHeader) {
				status = http.StatusOK
			}
		}
		s.got = append(s.got, hookRequest{status, r.Header.Clone(), b})
		w.WriteHeader(status)
	}))
	t.Cleanup(s.Close)
	return s
}

// delivered waits for an event's delivery (a 200) and returns its payload
// and every request of that event.
func (s *hookServer) delivered(t *testing.T, e webhooks.Event) (webhooks.Payload, []hookRequest) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		var all []hookRequest
		for _, g := range s.got {
			if g.header.Get(webhooks.EventHeader) == string(e) {
				all = append(all, g)
			}
		}
		s.mu.Unlock()
		if n := len(all); n > 0 && all[n-1].status == http.StatusOK {
			var p webhooks.Payload
			if err := json.Unmarshal(all[n-1].body, &p); err != nil {
				t.Fatalf("%s payload %s: %v", e, all[n-1].body, err)
			}
			return p, all
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s delivered; got %d request(s) of it", e, len(all))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A task in a real sandbox asks a question, is answered, asks to run a
// shell command, is allowed and completes: the webhook server gets a
// signed task.question, task.permission and task.ended, each after a 500
// (retried, delivered once), with the task's title, status and result; a
// webhook for questions only gets nothing else. A task given a host
// folder that changes a file ends in writebackReview: task.ended says so,
// and task.review follows.
func TestWebhooksTellOfATask(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()
	all, questions := newHookServer(t), newHookServer(t)
	const secret = "signing-secret-of-the-test"
	if _, err := h.unix.AddWebhook(ctx, wire.WebhookInput{Name: "all", URL: all.URL + "/hook", Secret: secret}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.unix.AddWebhook(ctx, wire.WebhookInput{Name: "questions", URL: questions.URL, Format: "discord", Events: []string{"task.question"}}); err != nil {
		t.Fatal(err)
	}

	const marker = "[[webhooks]]"
	llm.Script(marker, append([]llmtest.Turn{llmtest.Tool("ask_text_question", map[string]any{"question": "Which colour?"}),
		llmtest.Tool("run_shell", map[string]any{"command": "echo blue"})},
		llmtest.Done("Painted it blue.")...)...)
	task := h.create("Paint the wall " + marker)

	q, reqs := all.delivered(t, webhooks.TaskQuestion)
	if len(reqs) != 2 || reqs[0].status != 500 || q.Task.ID != task.ID || q.Question == nil || q.Question.Text != "Which colour?" {
		t.Fatalf("task.question: %d request(s), payload %+v", len(reqs), q)
	}
	questions.delivered(t, webhooks.TaskQuestion)
	pending, err := h.unix.Question(ctx, task.ID)
	if err != nil || pending == nil {
		t.Fatalf("pending question: %+v %v", pending, err)
	}
	if err := h.unix.Answer(ctx, task.ID, pending.ID, "blue"); err != nil {
		t.Fatal(err)
	}
	// run_shell asks by default.
	perm, reqs := all.delivered(t, webhooks.TaskPermission)
	if len(reqs) != 2 || perm.Permission == nil || perm.Permission.Tool != "run_shell" || !strings.Contains(perm.Permission.Details, "echo blue") {
		t.Fatalf("task.permission: %d request(s), payload %+v", len(reqs), perm)
	}
	asking := h.wait(task.ID, "the permission request", time.Minute, func(t wire.Task) bool { return t.PendingPermission != nil })
	if err := h.unix.Respond(ctx, task.ID, asking.PendingPermission.ID, true); err != nil {
		t.Fatal(err)
	}
	done := h.wait(task.ID, "the end", 2*time.Minute, terminal)
	h.ids.Note(done.VMID)
	if done.Status != "completed" {
		t.Fatalf("task %s: %q", done.Status, summary(done))
	}

	p, reqs := all.delivered(t, webhooks.TaskEnded)
	if len(reqs) != 2 || reqs[0].status != 500 {
		t.Fatalf("task.ended: %d request(s), want a 500 then a 200", len(reqs))
	}
	if p.Event != webhooks.TaskEnded || p.Task.ID != task.ID || p.Task.Title != done.Title || p.Task.Status != "completed" ||
		p.Task.Result != "Painted it blue." || p.Task.WasSuccessful == nil || !*p.Task.WasSuccessful {
		t.Fatalf("task.ended payload: %+v", p)
	}
	for _, r := range reqs {
		if err := webhooks.Verify(secret, r.header.Get(webhooks.SignatureHeader), r.body, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // room for a wrong delivery
	questions.mu.Lock()
	defer questions.mu.Unlock()
	for _, g := range questions.got {
		if e := g.header.Get(webhooks.EventHeader); e != string(webhooks.TaskQuestion) {
			t.Fatalf("the questions-only webhook got %s", e)
		}
		if g.header.Get(webhooks.SignatureHeader) != "" {
			t.Fatal("a webhook without a secret was signed")
		}
	}
	all.mu.Lock()
	n := len(all.got)
	all.mu.Unlock()
	if n != 6 {
		t.Fatalf("the webhook got %d requests, want 6 (three events, each after a 500)", n)
	}

	// A host folder's change to review.
	dir := filepath.Join(t.TempDir(), "wall")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const folder = "[[webhooks folder]]"
	llm.Script(folder, append([]llmtest.Turn{llmtest.Tool("write_file", map[string]any{"path": "folders/wall/colour.txt", "contents": "blue\n"})},
		llmtest.Done("Wrote the colour.")...)...)
	task2, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Note the colour " + folder, HostFolders: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	done2 := h.wait(task2.ID, "the review", 2*time.Minute, terminal)
	h.ids.Note(done2.VMID)
	if done2.Status != "writebackReview" {
		t.Fatalf("task %s: %q", done2.Status, summary(done2))
	}
	review, _ := all.delivered(t, webhooks.TaskReview)
	if review.Task.ID != task2.ID || review.Task.Status != "writebackReview" {
		t.Fatalf("task.review payload: %+v", review)
	}
	var ended2 *webhooks.Payload
	all.mu.Lock()
	for _, g := range all.got {
		var p webhooks.Payload
		if json.Unmarshal(g.body, &p) == nil && p.Event == webhooks.TaskEnded && p.Task.ID == task2.ID {
			ended2 = &p
		}
	}
	all.mu.Unlock()
	if ended2 == nil || ended2.Task.Status != "writebackReview" || ended2.Task.Result == "" {
		t.Fatalf("task.ended of the task under review: %+v", ended2)
	}
	if _, err := h.unix.DecideWriteback(ctx, task2.ID, false, nil); err != nil {
		t.Fatal(err)
	}
}
