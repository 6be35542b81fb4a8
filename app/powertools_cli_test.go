package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/mcptest"
)

// TestMCPCommands: an HTTP MCP server added with its token read from stdin
// is listed without the token, checked (its tools listed), turned off and
// on, and removed with its tools' permissions; a server that refuses the token fails its check in
// words, with a non-zero exit; bad input is refused before anything is
// stored.
func TestMCPCommands(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	const token = "Bearer mcp-token-for-the-test"
	srv := httptest.NewServer(mcptest.Handler("Authorization", token))
	t.Cleanup(srv.Close)

	var out, errOut strings.Builder
	if code := runWith([]string{"mcp", "add", "--name", "records", "--url", srv.URL, "--header", "Authorization=-", "--timeout", "5", "--home", h.home},
		strings.NewReader(token+"\n"), &out, &errOut); code != 0 {
		t.Fatalf("mcp add: exit %d: %s", code, errOut.String())
	}
	ls := h.ok("mcp", "ls").stdout
	if !regexp.MustCompile(`(?m)^records +on +ask +5s +` + regexp.QuoteMeta(srv.URL) + ` +Authorization$`).MatchString(ls) {
		t.Fatalf("mcp ls:\n%s", ls)
	}
	if js := h.ok("mcp", "ls", "--json").stdout; strings.Contains(js, "mcp-token") {
		t.Fatalf("mcp ls --json shows the token:\n%s", js)
	}
	check := h.ok("mcp", "check", "records").stdout
	for _, want := range []string{"records works: 4 tool(s)", "mcp__records__lookup", "mcp__records__hang"} {
		if !strings.Contains(check, want) {
			t.Fatalf("mcp check lacks %q:\n%s", want, check)
		}
	}

	// The same server without the token: added, but its check fails.
	h.ok("mcp", "add", "--name", "notoken", "--url", srv.URL)
	r := h.cli("mcp", "check", "notoken")
	if r.code == 0 || !strings.Contains(r.stderr, "notoken does not work:") || !strings.Contains(r.stderr, "Unauthorized") {
		t.Fatalf("check without the token: %s", r)
	}
	var c wire.MCPServerCheck
	decodeOne(t, h.cli("mcp", "check", "notoken", "--json").stdout, &c)
	if c.OK || c.Error == "" {
		t.Fatalf("check --json: %+v", c)
	}

	h.ok("mcp", "off", "records")
	if ls := h.ok("mcp", "ls").stdout; !regexp.MustCompile(`(?m)^records +off `).MatchString(ls) {
		t.Fatalf("after off:\n%s", ls)
	}
	h.ok("mcp", "on", "records")
	// Removing a server removes its tools' permissions, and only its.
	if _, err := h.c.PatchSettings(t.Context(), map[string]any{"toolPolicy": map[string]string{
		"mcp__records__*": "allow", "mcp__records__lookup": "deny", "mcp__notoken__*": "deny", "run_shell": "ask"}}); err != nil {
		t.Fatal(err)
	}
	h.ok("mcp", "rm", "records")
	if s, err := h.c.Settings(t.Context()); err != nil || len(s.ToolPolicy) != 2 || s.ToolPolicy["mcp__notoken__*"] != "deny" || s.ToolPolicy["run_shell"] != "ask" {
		t.Fatalf("the policy after removing records: %v %v", s.ToolPolicy, err)
	}
	h.ok("mcp", "rm", "notoken")
	if ls := h.ok("mcp", "ls").stdout; !strings.HasPrefix(ls, "No MCP servers yet") {
		t.Fatalf("after rm:\n%s", ls)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "add", "--name", "x"}, "needs --url URL or a command after --"},
		{[]string{"mcp", "add", "--name", "x", "--url", srv.URL, "--", "cat"}, "not both"},
		{[]string{"mcp", "add", "--name", "Bad Name", "--", "cat"}, `MCP server name "Bad Name": want 1 to 24 lower-case letters`},
		{[]string{"mcp", "add", "--name", "x", "--env", "NOVALUE", "--", "cat"}, "--env takes NAME=VALUE"},
		{[]string{"mcp", "add", "--name", "x", "--permission", "maybe", "--", "cat"}, `permission "maybe" is not allow, ask or deny`},
		{[]string{"mcp", "check", "nope"}, `MCP server "nope" not found`},
	} {
		if r := h.cli(bad.args...); r.code == 0 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%q: %s", bad.args, r)
		}
	}
	if ms, err := h.c.MCPServers(t.Context()); err != nil || len(ms) != 0 {
		t.Fatalf("bad input stored a server: %v %+v", err, ms)
	}

	// A stdio server: the command after --, its environment value secret.
	h.ok("mcp", "add", "--name", "local", "--env", "FAKE_MCP_TAG=tag-secret", "--off", "--", "/bin/cat", "-u")
	ls = h.ok("mcp", "ls").stdout
	if !regexp.MustCompile(`(?m)^local +off +ask +60s +/bin/cat -u +FAKE_MCP_TAG$`).MatchString(ls) || strings.Contains(ls, "tag-secret") {
		t.Fatalf("stdio server:\n%s", ls)
	}
}

// TestSkillsCommands: a skill folder is imported, listed, shown, turned
// off and on, and removed; a folder without a valid SKILL.md is refused in
// words; a finished task's draft prints as a SKILL.md and --save adds it.
func TestSkillsCommands(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	dir := filepath.Join(t.TempDir(), "csv-report")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: csv-report\ndescription: Turn a CSV into a one-page report.\n---\n\nOpen the CSV, total each column, write report.md.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := h.ok("skills", "import", dir); !strings.Contains(r.stdout, "Imported skill csv-report: Turn a CSV") {
		t.Fatalf("import: %s", r)
	}
	if ls := h.ok("skills", "ls").stdout; !regexp.MustCompile(`(?m)^csv-report +on +Turn a CSV into a one-page report\.$`).MatchString(ls) {
		t.Fatalf("skills ls:\n%s", ls)
	}
	if show := h.ok("skills", "show", "csv-report").stdout; !strings.Contains(show, "total each column, write report.md.") {
		t.Fatalf("skills show:\n%s", show)
	}
	h.ok("skills", "off", "csv-report")
	var l wire.SkillList
	decodeOne(t, h.ok("skills", "ls", "--json").stdout, &l)
	if len(l.Skills) != 1 || l.Skills[0].IsEnabled {
		t.Fatalf("after off: %+v", l)
	}
	h.ok("skills", "on", "csv-report")
	if r := h.cli("skills", "import", dir); r.code == 0 || !strings.Contains(r.stderr, "csv-report") {
		t.Fatalf("importing it again without --replace: %s", r)
	}
	h.ok("skills", "import", dir, "--replace")

	bad := filepath.Join(t.TempDir(), "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "SKILL.md"), []byte("no front matter here\n"), 0o644)
	if r := h.cli("skills", "import", bad); r.code == 0 || r.stderr == "" {
		t.Fatalf("a folder without front matter: %s", r)
	}
	if r := h.cli("skills", "import"); r.code != 2 || !strings.Contains(r.stderr, "needs a folder with a SKILL.md, or --git URL") {
		t.Fatalf("no folder: %s", r)
	}

	h.scripted("Sort the invoices.", llmtest.Done("Sorted 12 invoices by date.")...)
	id := h.runTask("Sort the invoices.")
	h.waitStatus(id, "completed")
	draft := h.ok("skills", "draft", id).stdout
	if !strings.HasPrefix(draft, "---\n") || !strings.Contains(draft, "name: sort-the-invoices") || !strings.Contains(draft, "Sorted 12 invoices by date.") {
		t.Fatalf("draft:\n%s", draft)
	}
	h.ok("skills", "draft", id, "--save")
	if ls := h.ok("skills", "ls").stdout; !strings.Contains(ls, "sort-the-invoices") {
		t.Fatalf("the saved draft is not listed:\n%s", ls)
	}
	h.ok("skills", "rm", "csv-report")
	if r := h.cli("skills", "show", "csv-report"); r.code == 0 || !strings.Contains(r.stderr, "csv-report") {
		t.Fatalf("show after rm: %s", r)
	}
}

// TestReviewCommand: run --folder gives a task a copy of a folder; the
// agent's changes wait for `review`, which lists them, approves one by its
// path and discards the rest; only the approved one reaches the folder.
func TestReviewCommand(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	dir := filepath.Join(t.TempDir(), "notes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "todo.txt"), []byte("buy milk\n"), 0o644)
	edits := append([]llmtest.Turn{
		llmtest.Tool("write_file", map[string]any{"path": "folders/notes/todo.txt", "contents": "buy milk\nbuy bread\n"}),
		llmtest.Tool("write_file", map[string]any{"path": "folders/notes/done.txt", "contents": "called mum\n"}),
	}, llmtest.Done("Tidied.")...)
	llm := h.scripted("Tidy my notes.", edits...)
	id := h.runTask("Tidy my notes.", "--folder", dir)
	h.waitStatus(id, "writebackReview")
	if show := h.ok("show", id).stdout; !strings.Contains(show, "needs you: review 2 changes to host folders") || !strings.Contains(show, dir) {
		t.Fatalf("show:\n%s", show)
	}
	ls := h.ok("review", id).stdout
	if !regexp.MustCompile(`(?m)^modified +`+regexp.QuoteMeta(filepath.Join(dir, "todo.txt"))+` +9 B → 19 B +pending$`).MatchString(ls) ||
		!regexp.MustCompile(`(?m)^added +`+regexp.QuoteMeta(filepath.Join(dir, "done.txt"))+` +11 B +pending$`).MatchString(ls) {
		t.Fatalf("review:\n%s", ls)
	}
	if d := h.ok("review", id, "--diff").stdout; !strings.Contains(d, "+buy bread") {
		t.Fatalf("review --diff:\n%s", d)
	}
	if r := h.cli("review", id, "--approve", "nope.txt"); r.code == 0 || !strings.Contains(r.stderr, "changed no file nope.txt") {
		t.Fatalf("an unknown path: %s", r)
	}
	if r := h.ok("review", id, "--approve", "todo.txt"); !strings.Contains(r.stdout, "waiting for review: 1 change") {
		t.Fatalf("approve one: %s", r)
	}
	if r := h.ok("review", id, "--discard"); !strings.Contains(r.stdout, "1 written to the host, 1 discarded") {
		t.Fatalf("discard the rest: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "todo.txt")); string(b) != "buy milk\nbuy bread\n" {
		t.Errorf("todo.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "done.txt")); err == nil {
		t.Error("the discarded done.txt reached the folder")
	}
	if h.task(id).Status != "completed" {
		t.Errorf("status %s after the review", h.task(id).Status)
	}
	if r := h.cli("run", "x", "--folder", filepath.Join(dir, "todo.txt")); r.code == 0 || !strings.Contains(r.stderr, "is not a folder") {
		t.Errorf("a file as a folder: %s", r)
	}

	// The folder is gone by the time the user approves: the approval fails
	// in words, and the change still waits (nothing is lost).
	os.Remove(filepath.Join(dir, "done.txt"))
	llm.Script("Tidy my notes again.", edits...)
	id = h.runTask("Tidy my notes again.", "--folder", dir)
	h.waitStatus(id, "writebackReview")
	gone := dir + ".moved"
	if err := os.Rename(dir, gone); err != nil {
		t.Fatal(err)
	}
	// (todo.txt is as the first task left it: only done.txt changed.)
	if r := h.cli("review", id, "--approve"); r.code == 0 || !strings.HasPrefix(r.stderr, "hivecrew: could not write 1 change(s) to the host folders: open host folder") {
		t.Fatalf("approve into a missing folder: %s", r)
	}
	if tk := h.task(id); tk.Status != "writebackReview" || tk.PendingWriteback == nil || tk.PendingWriteback.Count != 1 {
		t.Fatalf("after the failed approval: %s %+v", tk.Status, tk.PendingWriteback)
	}
	os.Rename(gone, dir)
	if r := h.ok("review", id, "--approve", "done.txt"); !strings.Contains(r.stdout, "Changes to the host folders: 1 written to the host.") {
		t.Fatalf("approve once the folder is back: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "done.txt")); string(b) != "called mum\n" {
		t.Errorf("done.txt = %q", b)
	}
}
