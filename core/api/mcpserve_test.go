package api_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/api"
	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/mcpserve"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/mcpclient"
)

// bearer is the header of an API key.
func bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

// asSession is the header of a web session: its cookie and, if set, its
// page token.
func asSession(s session, token bool) http.Header {
	h := http.Header{"Cookie": {s.cookie.String()}}
	if token {
		h.Set(api.SessionHeader, s.token)
	}
	return h
}

// TestMCPEndpointRunsATask: the official SDK's client, with the API key,
// lists the tools and runs a task to its end over streamable HTTP: the
// answer is the completed task with the agent's summary.
func TestMCPEndpointRunsATask(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	ctx := context.Background()
	s, err := mcpclient.HTTP(ctx, h.addr, bearer(h.key))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := []string{"answer_question", "approve_tool", "cancel_task", "get_task", "get_task_outputs", "list_tasks", "read_task_output", "run_task"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v; want %v", names, want)
	}
	h.llm.Script("[[mcp-http]]", llmtest.Done("Said hello.")...)
	var task mcpserve.Task
	if _, err := mcpclient.Call(ctx, s, "run_task", map[string]any{"description": "Say hello [[mcp-http]]", "waitSeconds": 60}, &task); err != nil {
		t.Fatal(err)
	}
	if task.Status != "completed" || !task.Ended || task.Successful == nil || !*task.Successful || task.Result != "Said hello." {
		t.Fatalf("run_task answered %+v", task)
	}
	var list mcpserve.TaskList
	if _, err := mcpclient.Call(ctx, s, "list_tasks", map[string]any{"status": []string{"completed"}}, &list); err != nil {
		t.Fatal(err)
	}
	if list.Total != 1 || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("list_tasks answered %+v", list)
	}
}

// TestMCPEndpointHoldsToTheAPIsRules: the endpoint is the API's, with
// its rules. Without credentials it answers 401, to a session cookie
// alone 403, to a key sent from another site (Origin) or under another
// host name (DNS rebinding) 403. A revoked key stops working at once. A
// web session past its step-up window cannot start a task with a folder
// of this computer (run_task says it needs a fresh sign-in, and no task
// is made), a fresh one can, and so can an API key. Inputs past their
// schema's bounds are refused before they reach the API.
func TestMCPEndpointHoldsToTheAPIsRules(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.WebStepUp = stepUpWindow })
	h.addProvider()
	ctx := context.Background()
	stale := staleSession(t, h)

	for _, c := range []struct {
		what   string
		hdr    http.Header
		status int
	}{
		{"no credentials", http.Header{}, http.StatusUnauthorized},
		{"a wrong key", bearer("hc_" + strings.Repeat("0", 40)), http.StatusUnauthorized},
		{"the session cookie alone", asSession(stale, false), http.StatusForbidden},
		{"the key from another site", http.Header{"Authorization": {"Bearer " + h.key}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"the key under another host name", http.Header{"Authorization": {"Bearer " + h.key}, "Host": {"evil.example:" + strings.Split(h.addr, ":")[1]}}, http.StatusForbidden},
	} {
		if err := mcpclient.Refused(ctx, h.addr, c.hdr, c.status); err != nil {
			t.Errorf("with %s: %v", c.what, err)
		}
	}

	// A revoked key is refused on its next call.
	second, err := h.unix.CreateAPIKey(ctx, "for MCP")
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpclient.HTTP(ctx, h.addr, bearer(second.Key))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := mcpclient.Call(ctx, s, "list_tasks", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.unix.RevokeAPIKey(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpclient.Call(ctx, s, "list_tasks", nil, nil); err == nil {
		t.Fatal("a revoked key still lists tasks")
	}

	// Step-up, as for POST /tasks.
	folder := t.TempDir()
	grant := map[string]any{"description": "Tidy my folder", "hostFolders": []string{folder}, "waitSeconds": 0}
	ss, err := mcpclient.HTTP(ctx, h.addr, asSession(stale, true))
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var te mcpclient.ToolError
	if _, err := mcpclient.Call(ctx, ss, "run_task", grant, nil); !errors.As(err, &te) || !strings.Contains(te.Text, "fresh sign-in") {
		t.Fatalf("a stale session's run_task with a host folder: %v; want a fresh sign-in asked for", err)
	}
	if l, err := h.unix.ListTasks(ctx, client.TaskQuery{}); err != nil || l.Total != 0 {
		t.Fatalf("tasks after the refusal: %+v %v", l, err)
	}
	if _, err := mcpclient.Call(ctx, ss, "list_tasks", nil, nil); err != nil {
		t.Fatalf("a stale session reads: %v", err)
	}
	for _, hdr := range []http.Header{asSession(freshSession(t, h), true), bearer(h.key)} {
		s, err := mcpclient.HTTP(ctx, h.addr, hdr)
		if err != nil {
			t.Fatal(err)
		}
		var task mcpserve.Task
		if _, err := mcpclient.Call(ctx, s, "run_task", grant, &task); err != nil {
			t.Fatalf("run_task with a host folder by %v: %v", hdr, err)
		}
		if _, err := mcpclient.Call(ctx, s, "cancel_task", map[string]any{"taskId": task.ID}, &task); err != nil {
			t.Fatal(err)
		}
		h.waitTask(task.ID, "cancelled", terminal)
		s.Close()
	}

	// Bounds.
	k, err := mcpclient.HTTP(ctx, h.addr, bearer(h.key))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_task", map[string]any{"taskId": "../../etc/passwd"}},
		{"get_task", map[string]any{"taskId": "00000000-0000-0000-0000-000000000000", "waitSeconds": mcpserve.MaxWait + 1}},
		{"run_task", map[string]any{"description": ""}},
		{"run_task", map[string]any{"description": "x", "timeoutMinutes": 100_000}},
		{"run_task", map[string]any{"description": "x", "networkMode": "everywhere"}},
		{"run_task", map[string]any{"description": "x", "toolPolicy": map[string]any{"run_shell": "allow"}}},
		{"list_tasks", map[string]any{"limit": 10_000}},
		{"answer_question", map[string]any{"taskId": "00000000-0000-0000-0000-000000000000", "questionId": "q", "answer": strings.Repeat("a", 10_001)}},
		{"read_task_output", map[string]any{"taskId": "00000000-0000-0000-0000-000000000000", "name": "a", "maxBytes": 1 << 30}},
	} {
		if _, err := mcpclient.Call(ctx, k, c.tool, c.args, nil); !errors.As(err, &te) || !strings.Contains(te.Text, "validating") {
			t.Errorf("%s %v: %v; want refused by its schema", c.tool, c.args, err)
		}
	}
	if l, err := h.unix.ListTasks(ctx, client.TaskQuery{}); err != nil || l.Total != 2 {
		t.Fatalf("tasks: %d %v; want the 2 runs above", l.Total, err)
	}
	// An unknown task is the API's 404, in words.
	if _, err := mcpclient.Call(ctx, k, "get_task", map[string]any{"taskId": "00000000-0000-0000-0000-000000000000"}, nil); !errors.As(err, &te) || !strings.Contains(te.Text, "not found") {
		t.Errorf("get_task of no task: %v", err)
	}
}

// TestMCPEndpointIsStateless: GET (the stream a stateful server offers)
// and DELETE (the end of a session) get 405 with Allow: POST, which MCP
// clients take as "no session here", and neither gets past the key.
func TestMCPEndpointIsStateless(t *testing.T) {
	h := startHelper(t, nil)
	for _, method := range []string{"GET", "DELETE"} {
		if status, _, hdr := h.reqHeader(method, mcpclient.Path, nil, "Accept", "text/event-stream"); status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "POST" {
			t.Errorf("%s %s: %d, Allow %q; want 405, POST", method, mcpclient.Path, status, hdr.Get("Allow"))
		}
		if status, _, _ := h.reqHeader(method, mcpclient.Path, nil, "Authorization", ""); status != http.StatusUnauthorized {
			t.Errorf("%s %s without the key: %d; want 401", method, mcpclient.Path, status)
		}
	}
}
