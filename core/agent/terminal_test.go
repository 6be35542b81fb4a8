package agent

import (
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// TestInterpretersAreKnownWhateverTheirVersion: a program counts by its
// family, whatever version or architecture suffix its name carries.
func TestInterpretersAreKnownWhateverTheirVersion(t *testing.T) {
	for name, want := range map[string]string{
		"python3.11": "python", "/usr/bin/python3.11": "python", "perl5.36.0": "perl",
		"perl5.36-x86_64-linux-gnu": "perl", "ruby3.1": "ruby", "node18": "node", "nodejs": "nodejs",
		"php8.2": "php", "lua5.4": "lua", "tclsh8.6": "tclsh", "wish": "wish", "wish8.6": "wish",
		"osascript": "osascript", "idle-python3.11": "idle-python3", "bash5": "bash", "Python (v3.11)": "python",
		"/System/Applications/Utilities/Script Editor.app/Contents/MacOS/Script Editor": "script editor",
		"mousepad": "", "perlbug": "", "pythonista": "", "chromium": "", "display-im6.q16": "", "": "",
	} {
		if got := family(runsCodeNames, name); got != want {
			t.Errorf("family(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestTheGateJudgesWhatRuns: the rules, on what guests answer.
func TestTheGateJudgesWhatRuns(t *testing.T) {
	xterm := protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "debian-xterm", Name: "XTerm",
		File: "/usr/share/applications/debian-xterm.desktop", Executable: "/usr/bin/xterm", Categories: []string{"System", "TerminalEmulator"}}
	mousepad := protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "org.xfce.mousepad", Name: "Mousepad", Executable: "/usr/bin/mousepad"}
	program := func(exe string) protocol.ResolvedApp {
		return protocol.ResolvedApp{Found: true, Kind: "program", Executable: exe}
	}
	bundle := func(id, exe string) protocol.ResolvedApp {
		return protocol.ResolvedApp{Found: true, Kind: "bundle", ID: id, Name: id, Executable: exe}
	}
	withTarget := func(r protocol.ResolvedApp, f protocol.FileFacts) protocol.ResolvedApp { r.Target = &f; return r }
	for _, c := range []struct {
		name              string
		tool, given, file string
		res               protocol.ResolvedApp
		want              launchClass
	}{
		{"a terminal's desktop id", "open_app", "debian-xterm", "", xterm, runsCode},
		{"a harmless name that runs a terminal", "open_app", "notes", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "notes", Name: "Notes", Executable: "/usr/bin/xterm"}, runsCode},
		{"a terminal by its category", "open_app", "foo", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "foo", Executable: "/opt/foo/foo", Categories: []string{"TerminalEmulator"}}, runsCode},
		{"an entry that runs in a terminal", "open_app", "Python (v3.11)", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "python3.11", Executable: "/opt/x/y", Terminal: true}, runsCode},
		{"python3.11 as open_file's app", "open_file", "python3.11", "outbox/job.txt", withTarget(program("/usr/bin/python3.11"), protocol.FileFacts{}), runsCode},
		{"perl5.36.0 as open_file's app", "open_file", "perl5.36.0", "outbox/job.txt", withTarget(program("/usr/bin/perl5.36.0"), protocol.FileFacts{}), runsCode},
		{"a link to an interpreter", "open_file", "notes-viewer", "outbox/job.txt", withTarget(program("/usr/bin/ruby3.1"), protocol.FileFacts{}), runsCode},
		{"a launcher in front", "open_app", "calm", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "calm", Executable: "/usr/bin/env", Args: []string{"GDK_BACKEND=x11", "mousepad"}}, runsCode},
		{"a terminal in the arguments", "open_app", "org.gnome.Terminal", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "gt", Executable: "/usr/bin/flatpak", Args: []string{"run", "org.gnome.Terminal"}}, runsCode},
		{"a script by its #! line", "open_file", "", "outbox/report", withTarget(mousepad, protocol.FileFacts{Shebang: "#!/bin/sh"}), runsCode},
		{"an executable file", "open_file", "", "outbox/tool", withTarget(mousepad, protocol.FileFacts{Executable: true}), runsCode},
		{"a script by its suffix", "open_file", "", "outbox/x.tcl", withTarget(mousepad, protocol.FileFacts{}), runsCode},
		{"an app bundle", "open_file", "", "inbox/Helper.app", withTarget(protocol.ResolvedApp{}, protocol.FileFacts{Dir: true}), runsCode},
		{"a default application in a terminal", "open_file", "", "outbox/notes.md", withTarget(protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "vim", Executable: "/usr/bin/vim.basic", Terminal: true}, protocol.FileFacts{}), runsCode},
		{"a text file in the editor", "open_file", "", "outbox/notes.txt", withTarget(mousepad, protocol.FileFacts{}), knownApp},
		{"a script in the editor, named", "open_file", "mousepad", "outbox/run.sh", withTarget(mousepad, protocol.FileFacts{Shebang: "#!/bin/sh", Executable: true}), knownApp},
		{"the editor", "open_app", "mousepad", "", mousepad, knownApp},
		{"the browser", "open_app", "chromium", "", program("/usr/bin/chromium"), knownApp},
		{"a known id that runs something else", "open_app", "org.xfce.mousepad", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "org.xfce.mousepad", Executable: "/opt/other/run"}, otherApp},
		{"an app it does not know", "open_app", "gimp", "", program("/usr/bin/gimp-2.10"), otherApp},
		{"no default application", "open_file", "", "outbox/data.bin2", withTarget(protocol.ResolvedApp{MIME: "application/octet-stream"}, protocol.FileFacts{}), otherApp},
		{"nothing by that name", "open_app", "nosuch", "", protocol.ResolvedApp{}, notFound},
		{"Terminal on a Mac", "open_app", "Terminal", "", bundle("com.apple.Terminal", "/System/Applications/Utilities/Terminal.app/Contents/MacOS/Terminal"), runsCode},
		{"iTerm by its id", "open_app", "com.googlecode.iterm2", "", bundle("com.googlecode.iterm2", "/Applications/iTerm.app/Contents/MacOS/iTerm2"), runsCode},
		{"Script Editor", "open_app", "Script Editor", "", bundle("com.apple.ScriptEditor2", "/System/Applications/Utilities/Script Editor.app/Contents/MacOS/Script Editor"), runsCode},
		{"Automator", "open_app", "Automator", "", bundle("com.apple.Automator", "/System/Applications/Automator.app/Contents/MacOS/Automator"), runsCode},
		{"a .command file", "open_file", "", "outbox/go.command", withTarget(bundle("com.apple.Terminal", "/System/Applications/Utilities/Terminal.app/Contents/MacOS/Terminal"), protocol.FileFacts{}), runsCode},
		{"TextEdit", "open_app", "TextEdit", "", bundle("com.apple.TextEdit", "/System/Applications/TextEdit.app/Contents/MacOS/TextEdit"), knownApp},
	} {
		v := judgeOpen(c.tool, c.given, c.file, c.res)
		if v.class != c.want {
			t.Errorf("%s: class %d (%s), want %d", c.name, v.class, v.why, c.want)
		}
		if v.class != notFound && v.class != knownApp && v.why == "" {
			t.Errorf("%s: no reason given", c.name)
		}
	}
}

// debianApps is what a Debian guest answers resolve_app with.
var debianApps = map[string]protocol.ResolvedApp{
	"debian-xterm": {Found: true, Kind: "desktop-entry", ID: "debian-xterm", Name: "XTerm", Executable: "/usr/bin/xterm", Categories: []string{"System", "TerminalEmulator"}},
	"mousepad":     {Found: true, Kind: "desktop-entry", ID: "org.xfce.mousepad", Name: "Mousepad", Executable: "/usr/bin/mousepad"},
	"gimp":         {Found: true, Kind: "desktop-entry", ID: "gimp", Name: "GNU Image Manipulation Program", Executable: "/usr/bin/gimp-2.10"},
	"python3.11":   {Found: true, Kind: "program", Executable: "/usr/bin/python3.11"},
	// A broken guest: the host refuses the answer, and counts the call
	// as one that may run code.
	"odd":               {Found: true, Kind: "program", Executable: "odd\x1b[2Kname"},
	"default:notes.txt": {Found: true, Kind: "desktop-entry", ID: "org.xfce.mousepad", Executable: "/usr/bin/mousepad", MIME: "text/plain"},
	"default:report":    {Found: true, Kind: "desktop-entry", ID: "org.xfce.mousepad", Executable: "/usr/bin/mousepad", MIME: "text/x-shellscript"},
}

// TestOpeningAsksForWhatRuns, through the guest protocol: under "ask
// before shell commands", a terminal by its desktop id, a script by its
// #! line and an answer the host cannot trust ask as open_terminal; an
// app the host does not know asks as open_app; the editor opens at once;
// a name that opens nothing is refused on the host.
func TestOpeningAsksForWhatRuns(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "debian-xterm"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "gimp"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "mousepad"})}},
		{calls: []openai.ToolCall{call("write_file", map[string]any{"path": "outbox/report", "contents": "#!/bin/sh\necho hi\n"})}},
		{calls: []openai.ToolCall{call("open_file", map[string]any{"path": "outbox/report"})}},
		{calls: []openai.ToolCall{call("write_file", map[string]any{"path": "outbox/notes.txt", "contents": "notes"})}},
		{calls: []openai.ToolCall{call("open_file", map[string]any{"path": "outbox/notes.txt"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "odd"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "nosuch"})}},
	}, done(true, "ok")...)...)
	e := newEnvOn(t, fake.Options{Apps: debianApps}, l, nil, nil)
	res := e.run()
	for _, want := range []struct {
		tool, shows string
		approve     bool
	}{
		{config.OpenTerminal, "/usr/bin/xterm", false},
		{"open_app", "/usr/bin/gimp-2.10", true},
		{config.OpenTerminal, "#!/bin/sh", false},
		{config.OpenTerminal, "could not be told", false},
	} {
		var p *Permission
		waitFor(t, "a permission request for "+want.shows, func() bool { _, p = e.r.Pending(); return p != nil })
		if p.Tool != want.tool || !strings.Contains(p.Details, `"runs":`) || !strings.Contains(p.Details, want.shows) {
			t.Fatalf("permission %+v, want %s showing %s", p, want.tool, want.shows)
		}
		if err := e.r.Respond(p.ID, want.approve); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the request to clear", func() bool { _, p2 := e.r.Pending(); return p2 == nil || p2.ID != p.ID })
	}
	if r := wait(t, res); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	var opened []string
	for _, a := range e.m.Driver().Actions() {
		opened = append(opened, a.Kind+" "+a.Text)
	}
	if got := strings.Join(opened, ", "); !strings.HasPrefix(got, "open_app gimp, open_app mousepad, open_file ") || !strings.HasSuffix(got, "outbox/notes.txt") || len(opened) != 3 {
		t.Fatalf("opened %s, want gimp (approved), mousepad and notes.txt", got)
	}
	reqs := l.requests()
	if !strings.Contains(reqs[1], "the user denied open_app (runs code (xterm): desktop entry debian-xterm runs /usr/bin/xterm)") {
		t.Errorf("the model was not told what was denied: …%s", reqs[1][max(0, len(reqs[1])-1500):])
	}
	if !strings.Contains(reqs[9], `no application named \"nosuch\" in the VM`) {
		t.Errorf("a name that opens nothing was not refused: …%s", reqs[9][max(0, len(reqs[9])-1500):])
	}
}

// TestOpeningUnderTheOtherPolicies: with shell commands denied, what runs
// code is refused without asking, and an app the host does not know still
// asks; with them allowed, everything opens at once.
func TestOpeningUnderTheOtherPolicies(t *testing.T) {
	script := append([]turn{
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "debian-xterm"})}},
		{calls: []openai.ToolCall{call("write_file", map[string]any{"path": "outbox/job.txt", "contents": "print(1)"})}},
		{calls: []openai.ToolCall{call("open_file", map[string]any{"path": "outbox/job.txt", "app": "python3.11"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "gimp"})}},
	}, done(true, "ok")...)

	l := newLLM(t, script...)
	e := newEnvOn(t, fake.Options{Apps: debianApps}, l, func(t *Task) { t.Policy = config.ToolPolicy{"run_shell": config.Deny} }, nil)
	res := e.run()
	var p *Permission
	waitFor(t, "the request for gimp", func() bool { _, p = e.r.Pending(); return p != nil })
	if p.Tool != "open_app" || !strings.Contains(p.Details, "gimp-2.10") {
		t.Fatalf("permission %+v, want open_app for gimp", p)
	}
	e.r.Respond(p.ID, false)
	wait(t, res)
	if acts := e.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("opened %+v with shell commands denied", acts)
	}
	for _, i := range []int{1, 3} {
		if !strings.Contains(l.requests()[i], "opening a terminal, a shell or an interpreter is not allowed for this task") {
			t.Errorf("request %d: the model was not told why: …%s", i, l.requests()[i][max(0, len(l.requests()[i])-1500):])
		}
	}

	l = newLLM(t, script...)
	e = newEnvOn(t, fake.Options{Apps: debianApps}, l, func(t *Task) { t.Policy = config.ToolPolicy{"run_shell": config.Allow} }, nil)
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	if acts := e.m.Driver().Actions(); len(acts) != 3 {
		t.Fatalf("opened %+v, want all three at once", acts)
	}
}

// TestAnOlderGuestIsJudgedByName: a guest without resolve_app gets the
// check by name, and the task says so.
func TestAnOlderGuestIsJudgedByName(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "python3"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	res := e.run()
	var p *Permission
	waitFor(t, "the request", func() bool { _, p = e.r.Pending(); return p != nil })
	if p.Tool != config.OpenTerminal || !strings.Contains(p.Details, "judged by its name only") {
		t.Fatalf("permission %+v", p)
	}
	e.r.Respond(p.ID, false)
	wait(t, res)
	said := false
	for len(e.events) > 0 {
		if ev := <-e.events; ev.ActivityType == "info" && strings.Contains(ev.Summary, "judged by the names they are given only") {
			said = true
		}
	}
	if !said {
		t.Fatal("the task was not told that names alone are judged")
	}
}

// TestOpeningATerminalFollowsTheShellPolicy answers a model that, barred
// from run_shell (or made to ask), opens a terminal or a shell script
// instead and would type its commands there: opening a terminal, a shell
// or a script is gated by open_terminal, which follows run_shell unless
// the policy names it. The fake guest cannot resolve names (no
// resolve_app), so this is the check by name that older guests get;
// terminal_test.go has the guests that say what runs.
func TestOpeningATerminalFollowsTheShellPolicy(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "xterm"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "org.gnome.Terminal.desktop"})}},
		{calls: []openai.ToolCall{call("open_file", map[string]any{"path": "inbox/run.sh"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "mousepad"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, func(t *Task) { t.Policy = config.ToolPolicy{"run_shell": config.Ask} })
	res := e.run()
	// xterm: asked as open_terminal, approved; the GNOME terminal: denied.
	for _, approve := range []bool{true, false} {
		var p *Permission
		waitFor(t, "a permission request", func() bool { _, p = e.r.Pending(); return p != nil })
		if p.Tool != config.OpenTerminal {
			t.Fatalf("permission asked for %s, want %s", p.Tool, config.OpenTerminal)
		}
		if err := e.r.Respond(p.ID, approve); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the request to clear", func() bool { _, p2 := e.r.Pending(); return p2 == nil || p2.ID != p.ID })
	}
	// The script: denied too.
	var p *Permission
	waitFor(t, "a permission request", func() bool { _, p = e.r.Pending(); return p != nil })
	e.r.Respond(p.ID, false)
	wait(t, res)
	var opened []string
	for _, a := range e.m.Driver().Actions() {
		opened = append(opened, a.Text)
	}
	if strings.Join(opened, ",") != "xterm,mousepad" {
		t.Fatalf("opened %v, want xterm (approved) and mousepad (not a terminal)", opened)
	}

	// With open_terminal denied outright (run_shell allowed), nothing asks.
	l2 := newLLM(t, append([]turn{{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "bash"})}}}, done(true, "ok")...)...)
	e2 := newEnv(t, l2, func(t *Task) {
		t.Policy = config.ToolPolicy{"run_shell": config.Allow, config.OpenTerminal: config.Deny}
	})
	wait(t, e2.run())
	if acts := e2.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("actions %+v", acts)
	}
	if !strings.Contains(l2.requests()[1], "opening a terminal, a shell or an interpreter is not allowed") {
		t.Fatal("the model was not told why")
	}
}

func TestTerminalNames(t *testing.T) {
	for name, want := range map[string]bool{
		"xterm": true, "XTerm": true, "/usr/bin/bash": true, "org.gnome.Terminal.desktop": true, "Terminal": true,
		"com.apple.Terminal": true, "iTerm.app": true, "python3": true, "bash -c id": true, "kitty": true,
		"mousepad": false, "chromium": false, "Firefox": false, "org.gnome.TextEditor": false, "LibreOffice Calc": false,
	} {
		if got := terminalName(name); got != want {
			t.Errorf("terminalName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestShellOutputIsLive: a run_shell command's output reaches the activity
// feed while it runs, in several events, before its result; output the
// guest sends while no command runs is dropped.
func TestShellOutputIsLive(t *testing.T) {
	cmd := "for i in 1 2 3 4 5; do echo line$i; sleep 0.4; done"
	l := newLLM(t, append([]turn{{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": cmd})}}}, done(true, "Ran.")...)...)
	e := newEnv(t, l, func(t *Task) { t.Policy = config.ToolPolicy{"run_shell": config.Allow} })
	e.r.ShellOutput(json.RawMessage(`{"requestId":1,"stream":"stdout","data":"forged before any command"}`))
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("%+v", r)
	}
	var live []Event
	resultAt := -1
	for i := 0; len(e.events) > 0; i++ {
		ev := <-e.events
		switch {
		case ev.Tool == "run_shell" && strings.HasPrefix(ev.Summary, "run_shell output:"):
			live = append(live, ev)
			if resultAt >= 0 {
				t.Errorf("live output after the command's result: %+v", ev)
			}
		case ev.Type == "tool_call_result" && ev.Tool == "run_shell":
			resultAt = i
		}
		if strings.Contains(ev.Details, "forged") {
			t.Errorf("output sent while no command ran reached the feed: %+v", ev)
		}
	}
	if len(live) < 2 {
		t.Fatalf("%d live output events, want the output as it came (several): %+v", len(live), live)
	}
	var all string
	for _, ev := range live {
		all += ev.Details
	}
	if all != "line1\nline2\nline3\nline4\nline5\n" {
		t.Errorf("live output %q", all)
	}
	if !strings.Contains(live[0].Details, "line1") || strings.Contains(live[0].Details, "line5") {
		t.Errorf("the first live event holds %q: not streamed", live[0].Details)
	}
}
