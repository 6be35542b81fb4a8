package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

func TestDefaultsAreValidAndAsDocumented(t *testing.T) {
	for _, goos := range []string{"darwin", "linux"} {
		s := Defaults(goos, "/home/ada")
		if err := s.Validate(); err != nil {
			t.Fatalf("%s defaults invalid: %v", goos, err)
		}
		if s.DefaultTimeoutMinutes != 30 || s.DefaultMaxIterations != 100 || s.WarmPoolSize != 1 ||
			s.IdleTimeoutMinutes != 30 || s.VMCPUCount != 2 || s.VMMemoryMB != 4096 || s.VMDiskGB != 32 ||
			s.ScreenshotMaxWidth != 1024 || s.ScreenshotMaxHeight != 768 || s.APIPort != 5482 {
			t.Fatalf("%s defaults differ from the documented ones: %+v", goos, s)
		}
		if s.ToolPolicy.For("run_shell") != Ask || s.ToolPolicy.For("mouse_click") != Allow {
			t.Fatalf("default policy: run_shell=%s mouse_click=%s", s.ToolPolicy.For("run_shell"), s.ToolPolicy.For("mouse_click"))
		}
	}
	if got := Defaults("darwin", "/u").KillSwitchShortcut; got != "cmd+shift+escape" {
		t.Fatalf("macOS shortcut = %q", got)
	}
	if got := Defaults("linux", "/u").KillSwitchShortcut; got != "ctrl+shift+escape" {
		t.Fatalf("linux shortcut = %q", got)
	}
}

func TestValidateNamesEveryBadSetting(t *testing.T) {
	s := Defaults("linux", "/home/ada")
	s.MaxConcurrentVMs = 0
	s.NetworkMode = "lan"
	s.OutputDirectory = "relative/out"
	s.ToolPolicy = ToolPolicy{"run_shel": Allow, "run_shell": "maybe"}
	s.KillSwitchShortcut = "escape"
	err := s.Validate()
	if !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("Validate = %v, want ErrInvalid", err)
	}
	for _, want := range []string{"maxConcurrentVMs", "networkMode", "outputDirectory", `unknown tool "run_shel"`, `"maybe"`, "killSwitchShortcut"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s: %v", want, err)
		}
	}
}

// TestKillSwitchShortcutMacOSRegisters: Settings refuse a kill-switch
// shortcut that macOS 15 will not register (Option or Option+Shift as its
// only modifiers), saying why, and one the menu-bar app cannot grab (an
// unknown key); they take Option with Cmd or Ctrl.
func TestKillSwitchShortcutMacOSRegisters(t *testing.T) {
	base := Defaults("darwin", "/Users/ada")
	for _, bad := range []string{"option+shift+k", "alt+escape", "ctrl+banana"} {
		_, err := base.Patch([]byte(`{"killSwitchShortcut": "` + bad + `"}`))
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "killSwitchShortcut") {
			t.Errorf("%s: %v, want an invalid killSwitchShortcut", bad, err)
		}
	}
	_, err := base.Patch([]byte(`{"killSwitchShortcut": "option+shift+k"}`))
	if err == nil || !strings.Contains(err.Error(), "macOS 15 and later do not register") || !strings.Contains(err.Error(), "add Cmd or Ctrl") {
		t.Errorf("option+shift+k: %v, want the reason and the way out", err)
	}
	got, err := base.Patch([]byte(`{"killSwitchShortcut": "cmd+option+k"}`))
	if err != nil || got.KillSwitchShortcut != "cmd+option+k" {
		t.Errorf("cmd+option+k: %+v, %v", got.KillSwitchShortcut, err)
	}
}

func TestPatch(t *testing.T) {
	base := Defaults("linux", "/home/ada")
	base.ToolPolicy["open_url"] = Ask
	got, err := base.Patch([]byte(`{"maxConcurrentVMs": 4, "toolPolicy": {"run_shell": "allow"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxConcurrentVMs != 4 || got.ToolPolicy.For("run_shell") != Allow {
		t.Fatalf("patch not applied: %+v", got)
	}
	if _, ok := got.ToolPolicy["open_url"]; ok {
		t.Fatalf("toolPolicy in a patch should replace the policy, got %v", got.ToolPolicy)
	}
	if base.MaxConcurrentVMs != 2 || base.ToolPolicy.For("run_shell") != Ask {
		t.Fatalf("Patch modified its receiver: %+v", base)
	}
	if got.DefaultTimeoutMinutes != base.DefaultTimeoutMinutes {
		t.Fatalf("unpatched setting changed")
	}

	for patch, want := range map[string]string{
		`{"maxConcurentVMs": 4}`:       `unknown field "maxConcurentVMs"`,
		`{"maxConcurrentVMs": "four"}`: "maxConcurrentVMs",
		`{"maxConcurrentVMs": 0}`:      "maxConcurrentVMs must be between",
		`[1,2]`:                        "not a JSON object",
		`{"networkMode": "lan"}`:       "networkMode",
	} {
		_, err := base.Patch([]byte(patch))
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Patch(%s) = %v, want an invalid error mentioning %q", patch, err, want)
		}
	}
}

func TestToolPolicyMerge(t *testing.T) {
	def := ToolPolicy{"run_shell": Ask, "open_url": Deny}
	merged := def.Merge(ToolPolicy{"run_shell": Allow})
	if merged.For("run_shell") != Allow || merged.For("open_url") != Deny || merged.For("wait") != Allow {
		t.Fatalf("merged = %v", merged)
	}
	if def["run_shell"] != Ask {
		t.Fatal("Merge modified the default policy")
	}
	if got := ToolPolicy(nil).Merge(nil); got == nil {
		t.Fatal("Merge of nils returned a nil map")
	}
}

func TestModelPrices(t *testing.T) {
	base := Defaults("linux", "/home/ada")
	got, err := base.Patch([]byte(`{"modelPrices": {"gpt-4.1": {"promptPerMTok": 2, "completionPerMTok": 8}, "claude-*": {"promptPerMTok": 3, "completionPerMTok": 15}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.ModelPrices["claude-*"].CompletionPerMTok != 15 || len(base.ModelPrices) != 0 {
		t.Fatalf("prices = %+v (base %+v)", got.ModelPrices, base.ModelPrices)
	}
	if _, err := base.Patch([]byte(`{"modelPrices": {"x": {"promptPerMTok": -1}}}`)); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("negative price = %v", err)
	}
}

// TestPolicyMeansWhatItSays: open_terminal follows run_shell unless it is
// named; a name that never gated anything (write_outside_shared) still
// loads from an old database but is dropped, so no setting claims a gate
// that does not exist; the clipboard tools, offered to the model, are
// gated; unknown names are refused.
func TestPolicyMeansWhatItSays(t *testing.T) {
	p := ToolPolicy{"run_shell": Deny}
	if p.For(OpenTerminal) != Deny || (ToolPolicy{}).For(OpenTerminal) != Allow {
		t.Fatal("open_terminal does not follow run_shell")
	}
	if (ToolPolicy{"run_shell": Deny, OpenTerminal: Ask}).For(OpenTerminal) != Ask {
		t.Fatal("a named open_terminal is not its own")
	}
	base := Defaults("linux", "/home/ada")
	got, err := base.Patch([]byte(`{"toolPolicy": {"write_outside_shared": "ask", "clipboard_write": "deny", "open_terminal": "deny"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ToolPolicy) != 2 || got.ToolPolicy[OpenTerminal] != Deny || got.ToolPolicy["clipboard_write"] != Deny {
		t.Fatalf("policy = %v, want open_terminal and clipboard_write", got.ToolPolicy)
	}
	if _, err := base.Patch([]byte(`{"toolPolicy": {"shutdown": "allow"}}`)); err == nil || !strings.Contains(err.Error(), `unknown tool "shutdown"`) {
		t.Fatalf("an unknown tool was accepted: %v", err)
	}
}

// TestNotifyEvents: every notification is on by default; a patch turns
// some off without touching the settings it was applied to; [] and null
// are none; an unknown or repeated event, or a string, is refused.
func TestNotifyEvents(t *testing.T) {
	base := Defaults("linux", "/home/ada")
	for _, e := range NotifyEventNames {
		if !base.Notifies(e) {
			t.Fatalf("%s is off by default", e)
		}
	}
	got, err := base.Patch([]byte(`{"notifyEvents": ["question"]}`))
	if err != nil || !got.Notifies(NotifyQuestion) || got.Notifies(NotifyCompleted) || len(got.NotifyEvents) != 1 {
		t.Fatalf("patched: %v %v", got.NotifyEvents, err)
	}
	if !slices.Equal(base.NotifyEvents, NotifyEventNames) {
		t.Fatalf("Patch changed its receiver's notifyEvents: %v", base.NotifyEvents)
	}
	for _, none := range []string{`{"notifyEvents": []}`, `{"notifyEvents": null}`} {
		if got, err := base.Patch([]byte(none)); err != nil || got.NotifyEvents == nil || len(got.NotifyEvents) != 0 {
			t.Fatalf("%s: %#v %v", none, got.NotifyEvents, err)
		}
	}
	for patch, want := range map[string]string{
		`{"notifyEvents": ["finished"]}`:         `unknown event "finished"`,
		`{"notifyEvents": ["failed", "failed"]}`: `"failed" is given twice`,
		`{"notifyEvents": "completed"}`:          "notifyEvents",
	} {
		if _, err := base.Patch([]byte(patch)); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Patch(%s) = %v, want an invalid error mentioning %q", patch, err, want)
		}
	}
}

// TestLooser: a task's policy is looser than Settings' where the merged
// policy asks less about some tool: a tool Settings ask about or deny,
// open_terminal through run_shell, an MCP server's tools by name or
// wildcard against the server's own permission. Tighter or equal
// policies, and a policy that names tools Settings allow anyway, are not.
func TestLooser(t *testing.T) {
	settings := ToolPolicy{"run_shell": Ask, "open_url": Deny, "mcp__files__delete": Deny}
	servers := func(tool string) (Permission, bool) {
		if tool == "mcp__files__read" || tool == "mcp__files__delete" || tool == "mcp__files__*" {
			return Ask, true // the server asks
		}
		return "", false
	}
	for _, c := range []struct {
		task ToolPolicy
		want []string
	}{
		{nil, nil},
		{ToolPolicy{"run_shell": Deny, "open_url": Deny, "wait": Allow, "screenshot": Ask}, nil},
		{ToolPolicy{"run_shell": Allow}, []string{OpenTerminal, "run_shell"}},
		{ToolPolicy{"run_shell": Allow, OpenTerminal: Ask}, []string{"run_shell"}},
		{ToolPolicy{OpenTerminal: Allow}, []string{OpenTerminal}},
		{ToolPolicy{"open_url": Ask}, []string{"open_url"}},
		{ToolPolicy{UseCredential: Allow}, []string{UseCredential}},
		{ToolPolicy{UseCredential: Ask}, nil},
		{ToolPolicy{"mcp__files__*": Allow}, []string{"mcp__files__*"}},
		{ToolPolicy{"mcp__files__read": Allow}, []string{"mcp__files__read"}},
		{ToolPolicy{"mcp__files__delete": Ask}, []string{"mcp__files__delete"}},
		{ToolPolicy{"mcp__files__read": Deny, "mcp__other__x": Allow}, nil},
	} {
		if got := settings.Looser(c.task, servers); !slices.Equal(got, c.want) {
			t.Errorf("Looser(%v) = %v, want %v", c.task, got, c.want)
		}
	}
	// Without a fallback, an MCP tool no policy names is allowed (For).
	if got := settings.Looser(ToolPolicy{"mcp__files__*": Allow}, nil); got != nil {
		t.Errorf("without a fallback: %v", got)
	}
}

// TestCompletionCheckTriesAndUploadLimit: the completion check's tries
// are 1 to 10 (default 2) and the upload limit 1 MB to 10 GB (default
// 512 MB); a value out of range is refused naming the setting and its
// bounds, and nothing changes.
func TestCompletionCheckTriesAndUploadLimit(t *testing.T) {
	base := Defaults("linux", "/home/ada")
	if base.CompletionCheckTries != 2 || base.MaxUploadMB != 512 {
		t.Fatalf("defaults: completionCheckTries %d, maxUploadMB %d; want 2 and 512", base.CompletionCheckTries, base.MaxUploadMB)
	}
	for patch, want := range map[string]string{
		`{"completionCheckTries": 0}`:     "completionCheckTries must be between 1 and 10 (got 0)",
		`{"completionCheckTries": 11}`:    "completionCheckTries must be between 1 and 10 (got 11)",
		`{"maxUploadMB": 0}`:              "maxUploadMB must be between 1 and 10240 (got 0)",
		`{"maxUploadMB": 10241}`:          "maxUploadMB must be between 1 and 10240 (got 10241)",
		`{"completionCheckTries": "two"}`: "completionCheckTries",
	} {
		got, err := base.Patch([]byte(patch))
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v; want ErrInvalid saying %q", patch, err, want)
		}
		if got.CompletionCheckTries != 2 || got.MaxUploadMB != 512 {
			t.Errorf("%s changed the settings: %d, %d", patch, got.CompletionCheckTries, got.MaxUploadMB)
		}
	}
	got, err := base.Patch([]byte(`{"completionCheckTries": 10, "maxUploadMB": 1}`))
	if err != nil || got.CompletionCheckTries != 10 || got.MaxUploadMB != 1 {
		t.Fatalf("in range: %+v, %v", got, err)
	}
}
