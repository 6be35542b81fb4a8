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
	if len(got) != len(want) {
		t.Fatalf("findings:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("finding %d = %q, want %q", i, got[i], w)
		}
	}
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
