package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/redact/redacttest"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// The secret has what JSON and Go quoting spell otherwise.
const secret = `hunter2&"correct"<horse>`

// testVault is a vault with one credential.
type testVault struct{}

func (testVault) Credentials() []CredentialInfo {
	return []CredentialInfo{{Name: "github", HasUsername: true, HasPassword: true}}
}

func (testVault) Secret(name, field string) (string, error) {
	switch {
	case name != "github":
		return "", errors.New("no such credential")
	case field == "username":
		return "octocat", nil
	case field == "password":
		return secret, nil
	}
	return "", errors.New("no such field")
}

// echoing is a guest whose shell shows back whatever was typed (as `cat`
// of a file the secret was typed into would).
type echoing struct {
	Guest
	typed string
}

func (g *echoing) Call(ctx context.Context, method string, params, result any) error {
	switch method {
	case "keyboard_type":
		b, _ := json.Marshal(params)
		var p struct{ Text string }
		json.Unmarshal(b, &p)
		g.typed += p.Text
	case "run_shell":
		out, _ := json.Marshal(map[string]any{"exitCode": 0, "stdout": "password=" + g.typed + "\n", "stderr": ""})
		return json.Unmarshal(out, result)
	case "traverse_accessibility_tree":
		tree := protocol.AccessibilityResult{Nodes: []protocol.Node{{Role: "application", Name: "Login", Children: []protocol.Node{
			{Role: "password text", Name: "Password", Value: &g.typed, Frame: protocol.Rect{X: 10, Y: 10, W: 100, H: 20}}}}}}
		out, _ := json.Marshal(tree)
		return json.Unmarshal(out, result)
	}
	return g.Guest.Call(ctx, method, params, result)
}

// TestCredentialIsTypedNeverShown: use_credential asks the first time,
// types the secret into the guest, and the secret is in no request to the
// model, no event and no file of the trace, though the guest shows it
// back; the second use asks no more; a name or field that does not exist
// is refused naming what there is.
func TestCredentialIsTypedNeverShown(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("use_credential", map[string]any{"name": "github", "field": "password"})}},
		{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": "cat typed.txt"})}},
		{calls: []openai.ToolCall{call("traverse_accessibility_tree", map[string]any{})}},
		{calls: []openai.ToolCall{call("use_credential", map[string]any{"name": "github", "field": "username"})}},
		{calls: []openai.ToolCall{call("use_credential", map[string]any{"name": "gitlab", "field": "password"})}},
		{calls: []openai.ToolCall{call("use_credential", map[string]any{"name": "github", "field": "totp"})}},
	}, done(true, "Logged in.")...)...)
	var g *echoing
	e := newEnvWith(t, l, func(t *Task) { t.Policy["run_shell"] = "allow" }, func(real Guest) Guest { g = &echoing{Guest: real}; return g })
	e.r.cfg.Vault = testVault{}
	var events []Event
	e.r.cfg.Emit = func(ev Event) { events = append(events, ev) }
	res := e.run()
	waitFor(t, "the approval request", func() bool { _, p := e.r.Pending(); return p != nil })
	_, p := e.r.Pending()
	if p.Tool != "use_credential" || strings.Contains(p.Details, secret) {
		t.Fatalf("permission %+v", p)
	}
	if err := e.r.Respond(p.ID, true); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, res); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	if g.typed != secret+"octocat" {
		t.Fatalf("typed %q", g.typed)
	}
	reqs := l.requests()
	for i, b := range reqs {
		if strings.Contains(b, secret) {
			t.Fatalf("request %d carries the secret", i)
		}
	}
	for i, b := range reqs {
		for _, spelled := range []string{`hunter2\u0026`, `hunter2&\"correct`, `\u003chorse`} {
			if strings.Contains(b, spelled) {
				t.Fatalf("request %d carries the secret spelled %s", i, spelled)
			}
		}
	}
	if !strings.Contains(reqs[2], `password=[secret: github password]`) {
		t.Errorf("the shell output the guest showed back is not redacted: %.300s", reqs[2])
	}
	if !strings.Contains(reqs[3], `e2 password text \"Password\" = \"[secret: github password]\"`) {
		t.Errorf("the tree the guest showed back is not redacted: %.600s", reqs[3][strings.Index(reqs[3], `"tool"`):])
	}
	if !strings.Contains(reqs[0], `Stored credentials (focus the field, then use_credential types it; you never see the secret): \"github\" (username, password)`) {
		t.Errorf("the prompt does not name the credential")
	}
	for want, i := range map[string]int{
		`there is no credential \"gitlab\": the stored ones are github`: 5,
		`credential \"github\" has no totp (it has username, password)`: 6,
	} {
		if !strings.Contains(reqs[i], want) {
			t.Errorf("request %d lacks %s", i, want)
		}
	}
	for _, ev := range events {
		if strings.Contains(ev.Summary+ev.Details+ev.Reasoning, secret) {
			t.Fatalf("event %+v carries the secret", ev)
		}
	}
	// Every byte the trace wrote.
	filepath.WalkDir(e.trace, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret", path)
			}
		}
		return nil
	})
}

// limitedVault's credential may be typed only into Firefox.
type limitedVault struct{ testVault }

func (limitedVault) Credentials() []CredentialInfo {
	return []CredentialInfo{{Name: "github", HasPassword: true, AllowedApps: []string{"Firefox"}}}
}

// TestCredentialOnlyIntoItsApps: a credential limited to an application is
// not typed while another one is in front.
func TestCredentialOnlyIntoItsApps(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("use_credential", map[string]any{"name": "github", "field": "password"})}},
	}, done(true, "Gave up.")...)...)
	e := newEnv(t, l, func(t *Task) { t.Policy["use_credential"] = "allow" })
	e.r.cfg.Vault = limitedVault{}
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	for _, a := range e.m.Driver().Actions() {
		if a.Kind == "type" {
			t.Fatalf("typed %q with the wrong application in front", a.Text)
		}
	}
	if req := l.requests()[1]; !strings.Contains(req, `credential \"github\" may be typed only while Firefox is in front, and the application in front is another`) ||
		strings.Contains(req, "Fake") {
		t.Errorf("the refusal does not say why, or quotes what the guest reported: %.400s", req[strings.Index(req, "may be typed"):])
	}
}

// TestNoCredentialsStored: without stored credentials use_credential is not
// offered, and a call to it says why.
func TestNoCredentialsStored(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("use_credential", map[string]any{"name": "github", "field": "password"})}},
	}, done(true, "Asked instead.")...)...)
	e := newEnv(t, l, nil)
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	if strings.Contains(l.requests()[0], `"name":"use_credential"`) {
		t.Error("use_credential offered without credentials")
	}
	if !strings.Contains(l.requests()[1], "no credentials are stored") {
		t.Error("the model was not told why")
	}
}

// quoting is a guest whose every shell command fails with an error that
// quotes, as a window's name would, the next spelling of what was typed.
type quoting struct {
	echoing
	next []string
}

func (g *quoting) Call(ctx context.Context, method string, params, result any) error {
	if method == "run_shell" {
		s := g.next[0]
		g.next = g.next[1:]
		return fmt.Errorf("no window named %q", s)
	}
	return g.echoing.Call(ctx, method, params, result)
}

// TestGuestErrorsAreFiltered (issue 34, items 3 and 7): an error that
// quotes what the guest reported (the secret, in each spelling the
// redactor promises) reaches the model, the events and the trace with the
// secret replaced; the task's result and status are filtered too.
func TestGuestErrorsAreFiltered(t *testing.T) {
	spellings := redacttest.Spellings(secret)
	names := slices.Sorted(maps.Keys(spellings))
	turns := []turn{{calls: []openai.ToolCall{call("use_credential", map[string]any{"name": "github", "field": "password"})}}}
	for range names {
		turns = append(turns, turn{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": "wmctrl -l"})}})
	}
	l := newLLM(t, append(turns, done(true, "Gave up.")...)...)
	g := &quoting{}
	for _, n := range names {
		g.next = append(g.next, spellings[n])
	}
	e := newEnvWith(t, l, func(t *Task) { t.Policy["run_shell"] = "allow"; t.Policy["use_credential"] = "allow" },
		func(real Guest) Guest { g.Guest = real; return g })
	e.r.cfg.Vault = testVault{}
	var events []Event
	e.r.cfg.Emit = func(ev Event) { events = append(events, ev) }
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	if g.typed != secret {
		t.Fatalf("typed %q", g.typed)
	}
	reqs := l.requests()
	for i, n := range names {
		// Request i+2 answers the call that quoted spelling i.
		var body struct{ Messages []struct{ Content any } }
		json.Unmarshal([]byte(reqs[i+2]), &body)
		last, _ := json.Marshal(body.Messages[len(body.Messages)-2].Content)
		var text string
		json.Unmarshal(last, &text)
		// Nothing of the secret is left around its label; what %q added
		// to the spelling (a backslash before one, a line break's \n) may be.
		rest, ok := strings.CutPrefix(text, `Error: no window named "`)
		rest, found := strings.CutSuffix(strings.Replace(rest, "[secret: github password]", "", 1), `"`)
		if !ok || !found || strings.Trim(strings.ReplaceAll(rest, `\n`, ""), `\`) != "" || !strings.Contains(text, "[secret: github password]") {
			t.Errorf("%s: the model was told %q", n, text)
		}
	}
	for _, ev := range events {
		for n, f := range spellings {
			if strings.Contains(ev.Summary+ev.Details+ev.Reasoning, strings.TrimSpace(f)) {
				t.Fatalf("event %+v carries the secret %s", ev, n)
			}
		}
	}
	filepath.WalkDir(e.trace, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			for n, f := range spellings {
				if bytes.Contains(b, []byte(strings.TrimSpace(f))) {
					t.Errorf("%s holds the secret %s", path, n)
				}
			}
		}
		return nil
	})
}
