package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/testbin"
)

// Power tools (issue 19), each with a real helper and sandbox, and local
// fakes only: an MCP server made with the official SDK, a SearXNG-shaped
// search backend and a web server, a scripted provider.

// offered returns the tool names a chat request offers.
func offered(t *testing.T, body string) []string {
	t.Helper()
	var req struct {
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

// runToEnd runs a task to its end and fails the test unless it completed.
func (h *helper) runToEnd(in wire.CreateTask) wire.Task {
	h.t.Helper()
	task, err := h.unix.CreateTask(context.Background(), in)
	if err != nil {
		h.t.Fatal(err)
	}
	done := h.wait(task.ID, "the end", 3*time.Minute, terminal)
	h.ids.Note(done.VMID)
	if done.Status != "completed" {
		h.t.Fatalf("task %s %q", done.Status, summary(done))
	}
	return done
}

// An MCP server's tool result reaches the model; a server that hangs is a
// clear tool error within its timeout, and the task goes on; a command
// that is not executable is refused when checked, and said at the task's
// start, not a stuck task.
func TestMCPServerToolsReachTheModel(t *testing.T) {
	fake, cleanup, err := testbin.Build("./tests/mcptest/fake-mcp", "fake-mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()
	srv, err := h.unix.AddMCPServer(ctx, wire.MCPServerInput{Name: "records", Command: fake, Env: map[string]string{"FAKE_MCP_TAG": "t-42"}, TimeoutSeconds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if srv.EnvNames[0] != "FAKE_MCP_TAG" || srv.Permission != "ask" {
		t.Fatalf("stored %+v", srv)
	}
	check, err := h.unix.CheckMCPServer(ctx, "records")
	if err != nil || !check.OK || !slices.Contains(check.Tools, "mcp__records__lookup") {
		t.Fatalf("check: %+v, %v", check, err)
	}
	notExec := filepath.Join(t.TempDir(), "server")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken, err := h.unix.AddMCPServer(ctx, wire.MCPServerInput{Name: "broken", Command: notExec})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := h.unix.CheckMCPServer(ctx, broken.ID); err != nil || c.OK || !strings.Contains(c.Error, "permission denied") {
		t.Fatalf("a file that is not executable: %+v, %v", c, err)
	}
	const m = "[[mcp records]]"
	llm.Script(m, append([]llmtest.Turn{
		llmtest.Tool("mcp__records__lookup", map[string]any{"key": "ab"}),
		llmtest.Tool("mcp__records__hang", map[string]any{}),
	}, llmtest.Done("Found it.")...)...)
	start := time.Now()
	task := h.runToEnd(wire.CreateTask{Description: "Find record ab " + m, ToolPolicy: map[string]string{"mcp__records__*": "allow"}})
	reqs := llm.Requests(m)
	if !slices.Contains(offered(t, reqs[0]), "mcp__records__lookup") || slices.Contains(offered(t, reqs[0]), "mcp__broken__lookup") {
		t.Fatalf("offered %v", offered(t, reqs[0]))
	}
	all := strings.Join(reqs, "\n")
	for _, want := range []string{"record ab: shelf 14 (tag t-42)", "mcp__records__hang did not answer within 3s"} {
		if !strings.Contains(all, want) {
			t.Errorf("the model never saw %q in\n%s", want, all)
		}
	}
	if took := time.Since(start); took > 90*time.Second {
		t.Errorf("the task took %s", took)
	}
	h.waitEvent(task.ID, "the broken server said", time.Second, func(e wire.Event) bool {
		return strings.Contains(e.Data.Summary, "MCP server broken:") && strings.Contains(e.Data.Summary, "not offered")
	})
}

// A web search result is read with read_webpage from the host, for an
// internet task; an offline task has no web tools, and a call to one
// reaches nothing.
func TestWebToolsFollowTheTasksNetwork(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html><head><title>Porthleven tides</title></head><body><nav>Menu Shop About</nav><article><h1>Porthleven tides</h1>
<p>The spring tide in March reaches 5.6 metres at the inner quay, the highest of the year, and the harbour dries at low water.</p>
<p>Harbour masters publish the tables every January; fishermen and surfers plan around them, and in storms the baulks go in.</p>
<p>The outer harbour fills fast in a south-westerly gale, which is why the inner harbour has its baulks.</p></article></body></html>`))
	}))
	defer page.Close()
	var queries []string
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.Query().Get("q"))
		json.NewEncoder(w).Encode(map[string]any{"results": []map[string]string{{"title": "Porthleven tides", "url": page.URL + "/tides", "content": "spring tides"}}})
	}))
	defer searx.Close()
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"webSearchBackend": "searxng", "webSearchURL": searx.URL}); err != nil {
		t.Fatal(err)
	}
	const on = "[[web on]]"
	llm.Script(on, append([]llmtest.Turn{
		llmtest.Tool("web_search", map[string]any{"query": "porthleven spring tide"}),
		llmtest.Tool("read_webpage", map[string]any{"url": page.URL + "/tides"}),
		llmtest.Tool("read_webpage", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}),
	}, llmtest.Done("5.6 m")...)...)
	// The page is on this machine's loopback: the task's allowlist opens
	// it on purpose (the metadata address stays refused).
	h.runToEnd(wire.CreateTask{Description: "How high is the spring tide? " + on, NetworkMode: "internet", AllowHosts: []string{"127.0.0.1"}})
	all := strings.Join(llm.Requests(on), "\n")
	for _, want := range []string{"1. Porthleven tides", "5.6 metres at the inner quay", "refused by the egress policy: 169.254.169.254"} {
		if !strings.Contains(all, want) {
			t.Errorf("the model never saw %q in\n%s", want, all)
		}
	}
	if strings.Contains(all, "Menu Shop About") || len(queries) != 1 || queries[0] != "porthleven spring tide" {
		t.Errorf("the page's menu reached the model, or the queries were %v", queries)
	}

	const off = "[[web off]]"
	llm.Script(off, append([]llmtest.Turn{llmtest.Tool("read_webpage", map[string]any{"url": page.URL + "/tides"})}, llmtest.Done("offline")...)...)
	h.runToEnd(wire.CreateTask{Description: "Look it up " + off, NetworkMode: "offline", AllowHosts: []string{"127.0.0.1"}})
	reqs := llm.Requests(off)
	tools := offered(t, reqs[0])
	if slices.Contains(tools, "web_search") || slices.Contains(tools, "read_webpage") {
		t.Fatalf("an offline task is offered %v", tools)
	}
	// The forged call is refused in words (the tool is not offered; its
	// gate says no), and the page never reaches the model.
	all = strings.Join(reqs, "\n")
	refused := strings.Contains(all, `there is no tool \"read_webpage\"`) || strings.Contains(all, "read_webpage is not allowed for this task")
	if !refused || strings.Contains(all, "5.6 metres") || len(queries) != 1 {
		t.Fatalf("an offline task's read_webpage was not refused, or reached the page or search:\n%s", all)
	}
}

// An @-mentioned skill's instructions reach the model in the first
// request; an unmentioned one's never do, though its name and description
// are listed; it is read with use_skill when the model picks it.
func TestMentionedSkillReachesTheModel(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()
	for _, s := range []wire.Skill{
		{Name: "tide-report", Description: "Write a tide report.", Instructions: "INSTR-TIDE: put the highest spring tide first."},
		{Name: "csv-tidy", Description: "Tidy CSV files.", Instructions: "INSTR-CSV: sort rows by the first column."},
		{Name: "pdf-notes", Description: "Notes from PDFs.", Instructions: "INSTR-PDF: quote page numbers."},
	} {
		if _, err := h.unix.SaveSkill(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.unix.SaveSkill(ctx, wire.Skill{Name: "Bad Name", Description: "x", Instructions: "y"}); err == nil || !strings.Contains(err.Error(), "lower-case") {
		t.Fatalf("a bad name: %v", err)
	}
	const m = "[[skills]]"
	llm.Script(m, append([]llmtest.Turn{llmtest.Tool("use_skill", map[string]any{"name": "csv-tidy"})}, llmtest.Done("Reported.")...)...)
	task := h.runToEnd(wire.CreateTask{Description: "Use @tide-report on the tables " + m})
	reqs := llm.Requests(m)
	if !strings.Contains(reqs[0], "INSTR-TIDE") || strings.Contains(reqs[0], "INSTR-CSV") || !strings.Contains(reqs[0], "- csv-tidy: Tidy CSV files.") {
		t.Fatalf("first request: mentioned skill missing, or an unmentioned one's instructions sent")
	}
	all := strings.Join(reqs, "\n")
	if !strings.Contains(all, "INSTR-CSV") || strings.Contains(all, "INSTR-PDF") {
		t.Fatalf("use_skill's instructions missing, or a skill never used was sent")
	}
	draft, err := h.unix.SkillDraft(ctx, task.ID)
	if err != nil || !strings.Contains(draft.Instructions, "use_skill") || draft.Name == "" {
		t.Fatalf("draft %+v, %v", draft, err)
	}
}

// A subagent runs in a sandbox of its own, returns its result and files
// to its parent; another is cancelled with its parent.
func TestSubagents(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 2)
	ctx := context.Background()
	// The child's marker comes after its title's eight words, and has
	// quotes: the parent's requests hold it escaped twice (in the call's
	// arguments), never as the child's do.
	const child = `one two three four five six seven eight child "a"`
	llm.Script(`child \"a\"`, append([]llmtest.Turn{
		llmtest.Tool("write_file", map[string]any{"path": "outbox/result.txt", "contents": "forty-two"}),
	}, llmtest.Done("The child found forty-two.")...)...)
	const parent = "[[parent]]"
	llm.Script(parent, append([]llmtest.Turn{
		llmtest.Tool("spawn_subagent", map[string]any{"task": child}),
		llmtest.Text("I wait for my subagent."),
		llmtest.Tool("run_shell", map[string]any{"command": "cat inbox/subagents/*/result.txt"}),
	}, llmtest.Done("The subagent found it.")...)...)
	task := h.runToEnd(wire.CreateTask{Description: "Delegate " + parent, ToolPolicy: map[string]string{"run_shell": "allow"}})
	done := task
	if len(done.Subagents) != 1 { // the parent's page lists its child
		t.Fatalf("subagents %+v", done.Subagents)
	}
	kid, err := h.unix.Task(ctx, done.Subagents[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	h.ids.Note(kid.VMID)
	if kid.Status != "completed" || kid.ParentTaskID != task.ID || kid.VMID == "" || kid.VMID == done.VMID {
		t.Fatalf("child %s, parent %q, VM %q (the parent's %q)", kid.Status, kid.ParentTaskID, kid.VMID, done.VMID)
	}
	all := strings.Join(llm.Requests(parent), "\n")
	for _, want := range []string{"ended completed: The child found forty-two.", `\"stdout\":\"forty-two`} {
		if !strings.Contains(all, want) {
			t.Errorf("the parent's model never saw %q in\n%s", want, all)
		}
	}

	// Cancelled with its parent.
	const slow = `one two three four five six seven eight slow "b"`
	wait := llmtest.Tool("wait", map[string]any{"seconds": 30})
	wait.Repeat = true
	llm.Script(`slow \"b\"`, wait)
	const parent2 = "[[parent two]]"
	waiting := llmtest.Text("I wait.")
	waiting.Repeat = true
	llm.Script(parent2, llmtest.Tool("spawn_subagent", map[string]any{"task": slow}), waiting)
	task2, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Delegate " + parent2})
	if err != nil {
		t.Fatal(err)
	}
	var kidID string
	h.wait(task2.ID, "a running subagent", 2*time.Minute, func(tk wire.Task) bool {
		if len(tk.Subagents) == 1 && tk.Subagents[0].Status == "running" {
			kidID = tk.Subagents[0].ID
			return true
		}
		return false
	})
	if _, err := h.unix.TaskAction(ctx, task2.ID, wire.TaskAction{Action: "cancel"}); err != nil {
		t.Fatal(err)
	}
	kid2 := h.wait(kidID, "the child's end", 30*time.Second, terminal)
	h.ids.Note(kid2.VMID)
	if kid2.Status != "cancelled" {
		t.Fatalf("the child of a cancelled parent is %s", kid2.Status)
	}
}
