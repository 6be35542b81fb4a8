package api_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestDeleteTaskLeavesNothing: DELETE ?cancel=false refuses a running task
// (409 saying so) and keeps it running; DELETE cancels it first and then
// nothing of it is left: not the task, its activity, its file copies nor
// its session's trace folder, while another task's stay.
func TestDeleteTaskLeavesNothing(t *testing.T) {
	t.Parallel()
	h := startHelper(t, nil)
	h.addProvider()
	ctx := context.Background()
	block := make(chan struct{})
	defer close(block)
	h.llm.Script("[[del-long]]", llmtest.Turn{Msg: llmtest.Text("...").Msg, Hold: block, Repeat: true})
	h.llm.Script("[[del-keep]]", llmtest.Done("Kept.")...)
	keep, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Stay [[del-keep]]"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitTask(keep.ID, "the kept task's end", terminal)
	sessionsBefore := dirNames(t, h.paths.Sessions())

	ct, body := multipartTask(map[string]string{"description": "Take long [[del-long]]"}, map[string]string{"in.txt": "input\n"})
	var task wire.Task
	if err := json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", body, "Content-Type", ct), &task); err != nil {
		t.Fatal(err)
	}
	h.waitTask(task.ID, "running", func(t wire.Task) bool { return t.Status == "running" })
	if got := dirNames(t, h.paths.Sessions()); len(got) != len(sessionsBefore)+1 {
		t.Fatalf("sessions %v after %v: want the running task's one more", got, sessionsBefore)
	}
	if _, err := os.Stat(filepath.Join(h.paths.Tasks(), task.ID)); err != nil {
		t.Fatalf("the task's folder: %v", err)
	}

	out := h.expect(409, "DELETE", "/api/v1/tasks/"+task.ID+"?cancel=false", nil)
	if !strings.Contains(string(out), "is running: cancel it first") {
		t.Fatalf("refusal = %s", out)
	}
	if st, _ := h.unix.Task(ctx, task.ID); st.Status != "running" {
		t.Fatalf("a refused delete left the task %s", st.Status)
	}
	h.expect(400, "DELETE", "/api/v1/tasks/"+task.ID+"?cancel=maybe", nil)

	h.expect(204, "DELETE", "/api/v1/tasks/"+task.ID, nil)
	for _, p := range []string{"", "/activity", "/files"} {
		h.expect(404, "GET", "/api/v1/tasks/"+task.ID+p, nil)
	}
	if _, err := os.Stat(filepath.Join(h.paths.Tasks(), task.ID)); !os.IsNotExist(err) {
		t.Fatalf("the task's folder is left: %v", err)
	}
	if got := dirNames(t, h.paths.Sessions()); strings.Join(got, ",") != strings.Join(sessionsBefore, ",") {
		t.Fatalf("sessions after delete %v, want the other task's alone %v", got, sessionsBefore)
	}
	if kept, err := h.unix.Task(ctx, keep.ID); err != nil || kept.Status != "completed" {
		t.Fatalf("the other task: %+v, %v", kept, err)
	}
	h.expect(404, "DELETE", "/api/v1/tasks/"+task.ID, nil)
}

// dirNames lists a folder's entries (none when it does not exist).
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
