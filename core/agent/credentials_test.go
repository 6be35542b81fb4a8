package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

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
	if !strings.Contains(l.requests()[1], `credential \"github\" may be typed only into Firefox; \"Fake\" is in front`) {
		t.Errorf("the refusal does not say why")
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
