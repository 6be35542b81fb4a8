package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintFindsWhatFailsOnAMac: each deprecated or nil-returning API is
// found in Objective-C and in a cgo preamble; a reasoned marker, a nil
// check and a comment that only names the API are not findings; a marker
// without a reason is one.
func TestLintFindsWhatFailsOnAMac(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	m := write("x_darwin.m", `// NSUserNotificationCenter is deprecated: this comment only names it.
void a(void) { [[NSUserNotificationCenter defaultUserNotificationCenter] deliverNotification:n]; }
void b(void) {
	// checkdarwin:allow the fallback for macOS 13
	[NSApp activateIgnoringOtherApps:YES];
}
BOOL c(NSRunningApplication *app, NSString *f) { return [app.bundleIdentifier caseInsensitiveCompare:f] == NSOrderedSame; }
NSString *d(NSRunningApplication *app) {
	NSString *b = app.bundleIdentifier;
	if (b == nil) return @"";
	return app.localizedName ?: @"";
}
void e(void) { CGImageRef i = CGWindowListCreateImage(r, o, w, f); } // checkdarwin:allow

NSString *u = @"https://example.com/SMLoginItemSetEnabled"; // a URL is not a comment
`)
	g := write("y_darwin.go", `package y

/*
#import <AppKit/AppKit.h>
static void z(void) { NSScreen *s = [NSScreen mainScreen]; (void)s; }
*/
import "C"
`)
	got, err := lintFiles([]string{m, g})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"x_darwin.m:2: NSUserNotificationCenter:",
		"x_darwin.m:7: bundleIdentifier:",
		"x_darwin.m:13: checkdarwin:allow needs a reason",
		"x_darwin.m:15: SMLoginItemSetEnabled:",
		"y_darwin.go:5: mainScreen:",
	}
	wantFindings(t, got, want)
}

// TestProjectDarwinCodeLintsClean is make check-darwin's lint on this
// repository: every finding was fixed or marked with its reason.
func TestProjectDarwinCodeLintsClean(t *testing.T) {
	res, err := check(context.Background(), "../..", []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linted < 10 {
		t.Fatalf("linted %d files: the darwin code was not found", res.Linted)
	}
	if len(res.Lint) > 0 {
		t.Fatalf("lint findings:\n%s", strings.Join(res.Lint, "\n"))
	}
}

// TestLintFindsHandlersSetAfterTheDelegate: the helper's logout gate was
// set on the app delegate after darwinkit's macos.RunApp had installed it,
// where AppKit may never ask for it. The lint finds macos.RunApp and a
// handler set on a delegate after SetDelegate; handlers set first are
// fine.
func TestLintFindsHandlersSetAfterTheDelegate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "serve_darwin.go")
	src := `package main

func late() {
	macos.RunApp(func(app appkit.Application, delegate *appkit.ApplicationDelegate) {
		delegate.SetApplicationShouldTerminate(func(appkit.Application) appkit.ApplicationTerminateReply { return 0 })
	})
}

func after(app appkit.Application) {
	d := &appkit.ApplicationDelegate{}
	d.SetApplicationDidFinishLaunching(nil)
	app.SetDelegate(d)
	d.SetApplicationShouldTerminate(nil)
}

func first(w appkit.Window) {
	wd := &appkit.WindowDelegate{}
	wd.SetWindowWillClose(nil)
	w.SetDelegate(wd)
	w.SetTitle("x")
}
`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := lintFiles([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"serve_darwin.go:4: macos.RunApp: installs the app delegate before its callback runs",
		"serve_darwin.go:13: d.SetApplicationShouldTerminate: a handler set after the delegate was installed (line 12)",
	}
	wantFindings(t, got, want)
}

// wantFindings checks the lint's findings, in order, against the start of
// each wanted one.
func wantFindings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("findings:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("finding %d = %q, want %q", i, got[i], w)
		}
	}
}
