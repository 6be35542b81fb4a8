package guest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// TestResolveAppSaysWhatRuns, on this machine's own desktop entries and
// programs: a terminal's desktop id, versioned interpreters given as
// open_file's app and a text file's default application resolve to the
// real programs they start; a script says its #! line. A text file then
// opens with its default application, answered once its window is there.
func TestResolveAppSaysWhatRuns(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)
	hello := must[protocol.HelloResult](a, protocol.MethodHello, helloParams())
	if !slices.Contains(hello.Capabilities, protocol.CapResolveApp) {
		t.Fatalf("the Linux agent does not announce %s: %v", protocol.CapResolveApp, hello.Capabilities)
	}
	for name, c := range map[string]string{"note.txt": "a note\n", "report": "#!/bin/sh\necho hi\n", "job.txt": "print(1)\n"} {
		if err := os.WriteFile(filepath.Join(a.shared, "inbox", name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	real := func(p string) string { r, _ := filepath.EvalSymlinks(p); return r }

	xterm := must[protocol.ResolvedApp](a, protocol.MethodResolveApp, protocol.ResolveAppParams{App: "debian-xterm"})
	if !xterm.Found || xterm.Kind != "desktop-entry" || xterm.ID != "debian-xterm" || xterm.Executable != real("/usr/bin/xterm") || !slices.Contains(xterm.Categories, "TerminalEmulator") {
		t.Errorf("debian-xterm = %+v", xterm)
	}
	for _, app := range []string{"python3.11", "perl5.36.0"} {
		r := must[protocol.ResolvedApp](a, protocol.MethodResolveApp, protocol.ResolveAppParams{App: app, Path: "inbox/job.txt"})
		if !r.Found || r.Executable != real("/usr/bin/"+app) || r.Target == nil || *r.Target != (protocol.FileFacts{}) {
			t.Errorf("open_file's app %s = %+v (target %+v)", app, r, r.Target)
		}
	}
	note := must[protocol.ResolvedApp](a, protocol.MethodResolveApp, protocol.ResolveAppParams{Path: "inbox/note.txt"})
	if !note.Found || note.MIME != "text/plain" || note.Executable != real("/usr/bin/mousepad") {
		t.Errorf("note.txt's default application = %+v", note)
	}
	report := must[protocol.ResolvedApp](a, protocol.MethodResolveApp, protocol.ResolveAppParams{Path: "inbox/report"})
	if report.Target == nil || report.Target.Shebang != "#!/bin/sh" || report.MIME != "text/x-shellscript" {
		t.Errorf("a script = %+v (target %+v)", report, report.Target)
	}
	if r := must[protocol.ResolvedApp](a, protocol.MethodResolveApp, protocol.ResolveAppParams{App: "no-such-app-anywhere"}); r.Found {
		t.Errorf("an unknown app resolved: %+v", r)
	}

	start := time.Now()
	must[protocol.Empty](a, protocol.MethodOpenFile, protocol.OpenFileParams{Path: "inbox/note.txt"})
	if took := time.Since(start); took > 9*time.Second {
		t.Errorf("open_file with the default application took %s", took)
	}
	env.WaitFor(15*time.Second, "Mousepad showing note.txt", func() bool {
		front, err := call[protocol.FrontmostApp](a, protocol.MethodFrontmostApp, nil)
		return err == nil && strings.Contains(front.WindowTitle, "note.txt")
	})
}
