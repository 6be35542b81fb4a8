package helper

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// script is what the agent does with an input file: read it from inbox/,
// write a result into outbox/, finish.
func script(marker string) []llmtest.Turn {
	return append([]llmtest.Turn{
		llmtest.Tool("read_file", map[string]any{"path": "inbox/order.txt"}),
		llmtest.Tool("write_file", map[string]any{"path": "outbox/receipt.txt", "contents": "Order received: 3 apples\n"}),
	}, llmtest.Done("Wrote outbox/receipt.txt for the order in inbox/order.txt.")...)
}

// TestTaskWithFilesThroughAPIAndCLI: a task posted as multipart with an
// input file runs in a real sandbox: the agent reads the file from inbox/
// (its bytes reach the model), writes outbox/receipt.txt, the task
// completes successfully, the output downloads, lands in the output
// directory, and the event stream delivered every event in order and
// closed after the terminal status. Then the same with `hivecrew run
// --wait`.
func TestTaskWithFilesThroughAPIAndCLI(t *testing.T) {
	home := newHome(t)
	p := startHelper(t, home)
	llm := llmtest.New(t)
	p.AddProvider(t, "Scripted", llm.URL, "sk-test")
	out := t.TempDir()
	ctx := context.Background()
	order := filepath.Join(t.TempDir(), "order.txt")
	os.WriteFile(order, []byte("3 apples\n"), 0o600)

	llm.Script("[[api]]", script("[[api]]")...)
	task, err := p.Unix.CreateTask(ctx, wire.CreateTask{Description: "Process the order in inbox [[api]]", OutputDirectory: out}, order)
	if err != nil {
		t.Fatal(err)
	}
	var streamed []wire.Event
	streamErr := make(chan error, 1)
	go func() {
		streamErr <- client.NewTCP("http://"+p.Addr, p.Key).Events(ctx, task.ID, 0, func(e wire.Event) error {
			streamed = append(streamed, e)
			return nil
		})
	}()
	done := p.WaitTask(t, task.ID, "the end", 2*time.Minute, terminal)
	if done.Status != "completed" || done.WasSuccessful == nil || !*done.WasSuccessful {
		t.Fatalf("task ended %s: %v", done.Status, *done.ResultSummary)
	}
	if reqs := llm.Requests("[[api]]"); len(reqs) < 2 || !strings.Contains(reqs[1], "3 apples") {
		t.Fatal("the input file's contents did not reach the model")
	}
	var got bytes.Buffer
	if err := p.Unix.Download(ctx, task.ID, "receipt.txt", "output", &got); err != nil || got.String() != "Order received: 3 apples\n" {
		t.Fatalf("download: %q %v", got.String(), err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "receipt.txt")); err != nil || string(b) != "Order received: 3 apples\n" {
		t.Fatalf("output directory: %q %v", b, err)
	}
	select {
	case err := <-streamErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream did not close after the terminal status")
	}
	act, err := p.Unix.Activity(ctx, task.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(streamed) != len(act.Events) {
		t.Fatalf("stream delivered %d events, the log has %d", len(streamed), len(act.Events))
	}
	for i, e := range streamed {
		if e.Seq != int64(i+1) || e.Type != act.Events[i].Type || e.Data.Summary != act.Events[i].Data.Summary {
			t.Fatalf("event %d: streamed %+v, logged %+v", i, e, act.Events[i])
		}
	}
	if last := streamed[len(streamed)-1]; last.Type != "status_change" || last.Data.Status != "completed" {
		t.Fatalf("the stream ended with %+v", last)
	}

	// The same through the CLI.
	llm.Script("[[cli]]", script("[[cli]]")...)
	cmd := exec.Command(filepath.Join(bin, "hivecrew"), "run", "--home", home, "--file", order, "--output-dir", out, "--wait", "Process the order in inbox [[cli]]")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hivecrew run --wait: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "completed") || !strings.Contains(stdout.String(), "Wrote outbox/receipt.txt") {
		t.Fatalf("hivecrew run --wait printed:\n%s", stdout.String())
	}
	if b, err := os.ReadFile(filepath.Join(out, "receipt (1).txt")); err != nil || string(b) != "Order received: 3 apples\n" {
		t.Fatalf("second output (collision-safe name): %q %v", b, err)
	}
}

// TestRefusedKeyFailsTheTaskVisibly: a provider whose endpoint refuses the
// key fails the task with that error in its summary.
func TestRefusedKeyFailsTheTaskVisibly(t *testing.T) {
	p := startHelper(t, newHome(t))
	llm := llmtest.New(t)
	llm.Key = "sk-right"
	p.AddProvider(t, "Scripted", llm.URL, "sk-wrong")
	task, err := p.Unix.CreateTask(context.Background(), wire.CreateTask{Description: "Anything"})
	if err != nil {
		t.Fatal(err)
	}
	done := p.WaitTask(t, task.ID, "the end", time.Minute, terminal)
	if done.Status != "failed" || !strings.Contains(*done.ResultSummary, "refused the API key") {
		t.Fatalf("task ended %s: %s", done.Status, *done.ResultSummary)
	}
}
