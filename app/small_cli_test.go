package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/mcptest"
)

// TestRm: rm refuses a running task and says how to delete it, rm --force
// cancels and deletes it, and rm of an ended task deletes it by a prefix
// of its id; a deleted task is gone for show and for rm.
func TestRm(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	hold := make(chan struct{})
	defer close(hold)
	llm := h.scripted("Wait forever.", llmtest.Turn{Msg: llmtest.Text("never answered").Msg, Hold: hold})
	llm.Script("Be quick.", llmtest.Done("Quick.")...)
	id := h.runTask("Wait forever.")
	h.waitStatus(id, "running")
	r := h.cli("rm", id)
	if r.code != 1 || !strings.Contains(r.stderr, "is running: cancel it first") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("rm of a running task: %s", r)
	}
	if h.task(id).Status != "running" {
		t.Fatal("a refused rm stopped the task")
	}
	if r := h.ok("rm", "--force", id); !strings.Contains(r.stdout, "Deleted task "+id[:8]) {
		t.Fatalf("rm --force: %s", r)
	}
	if _, err := h.c.Task(context.Background(), id); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("task after rm --force: %v", err)
	}

	quick := h.runTask("Be quick.")
	h.waitStatus(quick, "completed")
	h.ok("rm", quick[:8])
	if r := h.cli("show", quick); r.code != 1 {
		t.Fatalf("show after rm: %s", r)
	}
	if r := h.cli("rm", quick); r.code != 1 || !strings.HasPrefix(r.stderr, "hivecrew: ") {
		t.Fatalf("rm twice: %s", r)
	}
	if r := h.cli("rm"); r.code != 2 {
		t.Fatalf("rm without an id: %s", r)
	}
}

// TestSettingsCommand: settings show prints a setting, settings set changes
// it, and a value out of range is refused with the setting's bounds and
// changes nothing.
func TestSettingsCommand(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	if r := h.ok("settings", "show", "completionCheckTries", "maxUploadMB"); !strings.Contains(r.stdout, "completionCheckTries  2") || !strings.Contains(r.stdout, "maxUploadMB           512") {
		t.Fatalf("show: %s", r)
	}
	if r := h.ok("settings", "set", "completionCheckTries=5", "maxUploadMB=64"); !strings.Contains(r.stdout, "completionCheckTries = 5") || !strings.Contains(r.stdout, "maxUploadMB = 64") {
		t.Fatalf("set: %s", r)
	}
	for _, kv := range []string{"completionCheckTries=11", "maxUploadMB=0", "maxUploadMB=many"} {
		if r := h.cli("settings", "set", kv); r.code != 1 || !strings.Contains(r.stderr, strings.Split(kv, "=")[0]) {
			t.Fatalf("set %s: %s", kv, r)
		}
	}
	if r := h.cli("settings", "set", "completionCheckTries=11"); !strings.Contains(r.stderr, "between 1 and 10") {
		t.Fatalf("no bounds in %s", r)
	}
	s, err := h.c.Settings(context.Background())
	if err != nil || s.CompletionCheckTries != 5 || s.MaxUploadMB != 64 {
		t.Fatalf("settings after refusals: %d %d %v", s.CompletionCheckTries, s.MaxUploadMB, err)
	}
	if r := h.cli("settings", "show", "nope"); r.code != 2 || !strings.Contains(r.stderr, `no setting "nope"`) {
		t.Fatalf("show nope: %s", r)
	}
}

// TestMCPEdit: a server added without its token is given one by mcp edit
// (read from stdin), and then works; its address moves to another server
// with the header kept; a header removed is gone from the listing; a
// stored server's command replaces its address.
func TestMCPEdit(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	const token = "Bearer mcp-edit-token"
	srv := httptest.NewServer(mcptest.Handler("Authorization", token))
	t.Cleanup(srv.Close)
	other := httptest.NewServer(mcptest.Handler("Authorization", token))
	t.Cleanup(other.Close)
	h.ok("mcp", "add", "--name", "records", "--url", srv.URL)
	if r := h.cli("mcp", "check", "records"); r.code == 0 {
		t.Fatalf("check without the token: %s", r)
	}
	var out, errOut strings.Builder
	if code := runWith([]string{"mcp", "edit", "records", "--header", "Authorization=-", "--timeout", "7", "--home", h.home},
		strings.NewReader(token+"\n"), &out, &errOut); code != 0 || !strings.Contains(out.String(), "Changed MCP server records") {
		t.Fatalf("mcp edit: exit %d: %s %s", code, out.String(), errOut.String())
	}
	if r := h.ok("mcp", "check", "records"); !strings.Contains(r.stdout, "records works") {
		t.Fatalf("check with the token: %s", r)
	}
	h.ok("mcp", "edit", "records", "--url", other.URL, "--permission", "allow")
	if r := h.ok("mcp", "check", "records"); !strings.Contains(r.stdout, "records works") {
		t.Fatalf("check at the new address with the kept token: %s", r)
	}
	ls := h.ok("mcp", "ls").stdout
	if !regexp.MustCompile(`(?m)^records +on +allow +7s +`+regexp.QuoteMeta(other.URL)+` +Authorization$`).MatchString(ls) || strings.Contains(ls, "mcp-edit-token") {
		t.Fatalf("mcp ls after edits:\n%s", ls)
	}
	h.ok("mcp", "edit", "records", "--unset-header", "Authorization", "--env", "A=1")
	if r := h.cli("mcp", "check", "records"); r.code == 0 {
		t.Fatalf("check after the token was removed: %s", r)
	}
	for _, bad := range [][]string{
		{"mcp", "edit", "records", "--unset-header", "Nope"},
		{"mcp", "edit", "records", "--url", other.URL, "--", "/bin/true"},
		{"mcp", "edit"},
	} {
		if r := h.cli(bad...); r.code != 2 {
			t.Errorf("%v: %s", bad, r)
		}
	}
	if r := h.cli("mcp", "edit", "records", "--permission", "sometimes"); r.code != 1 || !strings.Contains(r.stderr, "permission") {
		t.Errorf("bad permission: %s", r)
	}
	h.ok("mcp", "edit", "records", "--", "/usr/bin/env", "mcp-server")
	var list wire.MCPServerList
	decodeOne(t, h.ok("mcp", "ls", "--json").stdout, &list)
	if m := list.Servers[0]; m.URL != "" || m.Command != "/usr/bin/env" || len(m.Args) != 1 || len(m.HeaderNames) != 0 || len(m.EnvNames) != 1 {
		t.Fatalf("after the command replaced the address: %+v", m)
	}
}

// TestCredentialsEditAndImport: credentials import reads a browser's
// export and stores every login, printing names and usernames but no
// password; a file with a bad row imports nothing and names the line;
// credentials edit renames and changes a password read from stdin.
func TestCredentialsEditAndImport(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("name,url,username,password\nmail,https://mail.example,ada,ml-S3CRET-1\n,,bob,x-S3CRET-2\n"), 0o600)
	r := h.cli("credentials", "import", bad)
	if r.code != 1 || !strings.Contains(r.stderr, "line 3: no name") || strings.Contains(r.stdout+r.stderr, "S3CRET") {
		t.Fatalf("import of a bad file: %s", r)
	}
	if ls := h.ok("credentials", "ls").stdout; !strings.HasPrefix(ls, "No credentials yet") {
		t.Fatalf("a refused import left:\n%s", ls)
	}
	good := filepath.Join(dir, "passwords.csv")
	os.WriteFile(good, []byte("\"url\",\"username\",\"password\",\"httpRealm\"\n\"https://www.example.org\",\"ada\",\"ff-S3CRET-3\",\n\"https://mail.example\",\"bob\",\"ml-S3CRET-4\",\n"), 0o600)
	r = h.ok("credentials", "import", good)
	if !strings.Contains(r.stdout, "Imported 2 credential(s)") || !strings.Contains(r.stdout, "example.org  ada") || strings.Contains(r.stdout+r.stderr, "S3CRET") {
		t.Fatalf("import: %s", r)
	}
	var out, errOut strings.Builder
	if code := runWith([]string{"credentials", "edit", "example.org", "--name", "example", "--password", "-", "--app", "Firefox", "--home", h.home},
		strings.NewReader("new-S3CRET-5\n"), &out, &errOut); code != 0 || strings.Contains(out.String(), "S3CRET") {
		t.Fatalf("edit: exit %d: %s %s", code, out.String(), errOut.String())
	}
	ls := h.ok("credentials", "ls").stdout
	if !regexp.MustCompile(`(?m)^example +ada +stored +- +Firefox$`).MatchString(ls) || !regexp.MustCompile(`(?m)^mail\.example +bob +stored`).MatchString(ls) {
		t.Fatalf("ls after edit:\n%s", ls)
	}
	if r := h.cli("credentials", "edit", "example", "--no-password"); r.code != 1 || !strings.Contains(r.stderr, "needs a password or a totpSeed") {
		t.Fatalf("removing the only secret: %s", r)
	}
	if r := h.cli("credentials", "edit", "example"); r.code != 2 {
		t.Fatalf("edit without a change: %s", r)
	}
}
