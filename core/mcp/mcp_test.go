package mcp

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/tests/mcptest"
	"github.com/hivecrew/hivecrew/tests/testbin"
)

// fakeServer builds tests/mcptest's stdio server.
func fakeServer(t *testing.T) string {
	t.Helper()
	bin, cleanup, err := testbin.Build("./tests/mcptest/fake-mcp", "fake-mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return bin
}

func toolsByName(s *Sessions) map[string]func(context.Context, json.RawMessage) (string, error) {
	out := map[string]func(context.Context, json.RawMessage) (string, error){}
	for _, t := range s.Tools() {
		out[t.Name] = t.Run
	}
	return out
}

// A stdio server's tools are offered with its prefix and its permission;
// a call reaches it with its environment; a crash and a hang are clear
// tool errors, not a stuck call; a big answer is cut.
func TestStdioServer(t *testing.T) {
	bin := fakeServer(t)
	ctx := context.Background()
	t.Setenv("HIVECREW_SHOULD_NOT_LEAK", "1")
	sess, problems := Connect(ctx, []Server{{Name: "records", Command: bin, Env: map[string]string{"FAKE_MCP_TAG": "t-42"}, Timeout: 2 * time.Second, Permission: config.Allow}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	defer sess.Close()
	tools := sess.Tools()
	if len(tools) != 4 {
		t.Fatalf("tools: %+v", tools)
	}
	for _, tl := range tools {
		if !strings.HasPrefix(tl.Name, "mcp__records__") || tl.Default != config.Allow || tl.Timeout != 2*time.Second || !strings.Contains(tl.Description, "[MCP server records]") {
			t.Errorf("tool %+v", tl)
		}
	}
	run := toolsByName(sess)
	out, err := run["mcp__records__lookup"](ctx, json.RawMessage(`{"key":"ab"}`))
	if err != nil || out != "record ab: shelf 14 (tag t-42)" {
		t.Fatalf("lookup = %q, %v", out, err)
	}
	out, err = run["mcp__records__big"](ctx, json.RawMessage(`{}`))
	if err != nil || len(out) > MaxResult+100 || !strings.Contains(out, "[cut at") {
		t.Fatalf("big: %d bytes, %v", len(out), err)
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = run["mcp__records__hang"](hctx, json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "did not answer hang within 2s") || time.Since(start) > 5*time.Second {
		t.Fatalf("hang: %v after %s", err, time.Since(start))
	}
	_, err = run["mcp__records__crash"](ctx, json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "MCP server records failed on crash") {
		t.Fatalf("crash: %v", err)
	}
	// The server is gone: the next call says so at once.
	start = time.Now()
	if _, err := run["mcp__records__lookup"](ctx, json.RawMessage(`{"key":"ab"}`)); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("after the crash: %v after %s", err, time.Since(start))
	}
}

// The helper's own environment does not reach a server.
func TestStdioServerEnvironmentIsItsOwn(t *testing.T) {
	t.Setenv("HIVECREW_SECRET_OF_THE_HELPER", "y")
	env := serverEnv(map[string]string{"TOKEN": "x"})
	for _, kv := range env {
		if strings.HasPrefix(kv, "HIVECREW_SECRET_OF_THE_HELPER=") {
			t.Fatalf("env %v", env)
		}
	}
	if !strings.Contains(strings.Join(env, "\n"), "TOKEN=x") {
		t.Fatalf("env %v", env)
	}
}

// A streamable-HTTP server gets its headers; without them it refuses, and
// that is a problem with the server, not a stuck task.
func TestHTTPServer(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler("Authorization", "Bearer s3cret"))
	defer srv.Close()
	ctx := context.Background()
	sess, problems := Connect(ctx, []Server{{Name: "remote", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	defer sess.Close()
	out, err := toolsByName(sess)["mcp__remote__lookup"](ctx, json.RawMessage(`{"key":"abc"}`))
	if err != nil || !strings.HasPrefix(out, "record abc: shelf 21") {
		t.Fatalf("lookup = %q, %v", out, err)
	}
	if tl := sess.Tools()[0]; tl.Default != config.Ask {
		t.Errorf("default permission %q, want ask", tl.Default)
	}
	_, problems = Connect(ctx, []Server{{Name: "remote", URL: srv.URL}})
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "MCP server remote: could not start a session") {
		t.Fatalf("without the token: %v", problems)
	}
}

// Bad configurations get clear errors: a command that is not executable,
// one that does not exist, a name that cannot prefix a tool, a URL that
// is not http(s).
func TestBadServers(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exits := filepath.Join(dir, "exits.sh")
	if err := os.WriteFile(exits, []byte("#!/bin/sh\necho 'no config file' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		s    Server
		want string
	}{
		{Server{Name: "a", Command: notExec}, "permission denied"},
		{Server{Name: "a", Command: filepath.Join(dir, "missing")}, "no such file"},
		{Server{Name: "a", Command: exits}, "no config file"},
		{Server{Name: "Bad Name", Command: "true"}, "want 1 to 24 lower-case"},
		{Server{Name: "a", URL: "file:///etc/passwd"}, "is not http(s)"},
		{Server{Name: "a"}, "give a command"},
	}
	for _, c := range cases {
		start := time.Now()
		_, problems := Connect(context.Background(), []Server{c.s})
		if len(problems) != 1 || !strings.Contains(problems[0].Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.s, problems, c.want)
		}
		if time.Since(start) > ConnectTimeout {
			t.Errorf("%+v took %s", c.s, time.Since(start))
		}
	}
}
