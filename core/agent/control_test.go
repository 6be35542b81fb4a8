package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/store"
)

func TestQuestionsBlockUntilAnswered(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("ask_multiple_choice", map[string]any{"question": "Which format?", "options": []string{"PDF", "DOCX"}})}},
		{calls: []openai.ToolCall{call("ask_text_question", map[string]any{"question": "File name?"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	res := e.run()
	var q *Question
	waitFor(t, "the question", func() bool { q, _ = e.r.Pending(); return q != nil })
	if st, _ := e.r.Status(); st != store.StatusRunning || len(q.Options) != 2 {
		t.Fatalf("status %s, question %+v", st, q)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d LLM requests while the question waits, want 1", n)
	}
	if err := e.r.Answer(q.ID, "RTF"); err == nil {
		t.Fatal("an answer outside the options was accepted")
	}
	if err := e.r.Answer("stale", "PDF"); err == nil {
		t.Fatal("a stale question id was accepted")
	}
	if err := e.r.Answer(q.ID, "PDF"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the text question", func() bool { q2, _ := e.r.Pending(); return q2 != nil && q2.ID != q.ID })
	q2, _ := e.r.Pending()
	e.r.Answer(q2.ID, "report-2026")
	wait(t, res)
	reqs := l.requests()
	if !strings.Contains(reqs[1], "The user answered: PDF") || !strings.Contains(reqs[2], "The user answered: report-2026") {
		t.Fatal("the answers did not reach the model")
	}
}

func TestPermissionAskAndDeny(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": "echo approved > outbox/ok.txt"})}},
		{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": "echo denied > outbox/no.txt"})}},
		{calls: []openai.ToolCall{call("open_url", map[string]any{"url": "https://example.com"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, func(t *Task) { t.Policy = config.ToolPolicy{"run_shell": config.Ask, "open_url": config.Deny} })
	res := e.run()
	for _, approve := range []bool{true, false} {
		var p *Permission
		waitFor(t, "a permission request", func() bool { _, p = e.r.Pending(); return p != nil })
		if p.Tool != "run_shell" {
			t.Fatalf("permission for %s", p.Tool)
		}
		if err := e.r.Respond(p.ID, approve); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the request to clear", func() bool { _, p2 := e.r.Pending(); return p2 == nil || p2.ID != p.ID })
	}
	wait(t, res)
	shared := e.m.Spec().SharedDir()
	if b, err := os.ReadFile(filepath.Join(shared, "outbox", "ok.txt")); err != nil || strings.TrimSpace(string(b)) != "approved" {
		t.Fatalf("approved command: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(shared, "outbox", "no.txt")); !os.IsNotExist(err) {
		t.Fatal("a denied command ran")
	}
	reqs := l.requests()
	if !strings.Contains(reqs[2], "the user denied run_shell") || !strings.Contains(reqs[3], "open_url is not allowed") {
		t.Fatal("the model was not told of the denials")
	}
	if strings.Contains(reqs[0], `"name":"open_url"`) {
		t.Fatal("a denied tool was offered to the model")
	}
}

func TestPauseResumeInstructionsAndTakeover(t *testing.T) {
	hold := make(chan struct{})
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("mouse_move", map[string]any{"x": 1, "y": 1})}, hold: hold},
		{calls: []openai.ToolCall{call("mouse_move", map[string]any{"x": 2, "y": 2})}},
		{calls: []openai.ToolCall{call("mouse_move", map[string]any{"x": 3, "y": 3})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	res := e.run()
	waitFor(t, "the first LLM request", func() bool { return len(l.requests()) == 1 })
	// Pause while the LLM answers: its tool call is not made.
	e.r.TakeOver()
	close(hold)
	time.Sleep(200 * time.Millisecond)
	if st, reason := e.r.Status(); st != store.StatusPaused || !strings.Contains(reason, "user is in control") {
		t.Fatalf("status %s (%s)", st, reason)
	}
	if n := len(e.m.Driver().Actions()); n != 0 {
		t.Fatalf("%d actions after the takeover", n)
	}
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d LLM requests while paused", n)
	}
	e.r.Resume("Use the second monitor.")
	waitFor(t, "the next request", func() bool { return len(l.requests()) >= 2 })
	if !strings.Contains(l.requests()[1], "New instructions from the user: Use the second monitor.") {
		t.Fatal("the instructions of the resume did not reach the model")
	}
	// Instructions without pausing reach the next turn.
	e.r.Instruct("Hurry up.")
	wait(t, res)
	found := false
	for _, r := range l.requests()[2:] {
		found = found || strings.Contains(r, "Hurry up.")
	}
	if !found {
		t.Fatal("instructions added without pausing never reached the model")
	}
}

func TestCancelInterruptsInFlightWork(t *testing.T) {
	t.Run("LLM request", func(t *testing.T) {
		hold := make(chan struct{})
		defer close(hold)
		e := newEnv(t, newLLM(t, turn{hold: hold}), nil)
		res := e.run()
		time.Sleep(200 * time.Millisecond)
		t0 := time.Now()
		e.r.Cancel()
		r := wait(t, res)
		if r.Status != store.StatusCancelled || time.Since(t0) > time.Second {
			t.Fatalf("%+v after %s", r, time.Since(t0))
		}
	})
	t.Run("guest call", func(t *testing.T) {
		e := newEnv(t, newLLM(t, turn{calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 60})}}), nil)
		res := e.run()
		// The call has begun (on a loaded machine the model's turn may take
		// longer than any fixed pause), and has run a while.
		deadline := time.After(10 * time.Second)
		for began := false; !began; {
			select {
			case ev := <-e.events:
				began = ev.Type == "tool_call_start"
			case <-deadline:
				t.Fatal("the wait call never began")
			}
		}
		time.Sleep(300 * time.Millisecond)
		t0 := time.Now()
		e.r.Cancel()
		r := wait(t, res)
		if r.Status != store.StatusCancelled || time.Since(t0) > time.Second {
			t.Fatalf("%+v after %s", r, time.Since(t0))
		}
		// The activity says why the call ended, in words.
		var said string
		for len(e.events) > 0 {
			if ev := <-e.events; ev.Type == "tool_call_result" {
				said = ev.Summary
			}
		}
		if said != "wait interrupted: the task was cancelled" {
			t.Errorf("the interrupted call reads %q", said)
		}
	})
}
