package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCrossCompileSaysWhenItDidNotRun: without a macOS SDK the clang build
// is reported as not run, never as passed; a folder that is not an SDK is
// an error.
func TestCrossCompileSaysWhenItDidNotRun(t *testing.T) {
	t.Setenv(sdkEnv, "")
	c := runCrossCompile(context.Background(), "testdata/planted", []string{"./..."})
	if c.ran || !strings.Contains(c.report(), "not run: "+sdkEnv+" is not set") {
		t.Fatalf("without an SDK: %+v: %s", c, c.report())
	}
	t.Setenv(sdkEnv, t.TempDir())
	c = runCrossCompile(context.Background(), "testdata/planted", []string{"./..."})
	if !c.ran || c.err == nil || !strings.Contains(c.report(), "FAILED") || !strings.Contains(c.err.Error(), "not a macOS SDK") {
		t.Fatalf("with a folder that is no SDK: %+v: %s", c, c.report())
	}
}

// TestCrossCompileUsesClangWithTheSDK: given an SDK, the build runs cgo
// with clang for arm64-apple-macos against that SDK. A stand-in clang
// records how it was called (no macOS SDK can be had here); it fails, and
// the failure is reported.
func TestCrossCompileUsesClangWithTheSDK(t *testing.T) {
	sdk := t.TempDir()
	if err := os.WriteFile(filepath.Join(sdk, "SDKSettings.json"), []byte(`{"Version":"15.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	clang := "#!/bin/sh\necho \"$@\" >> " + calls + "\necho 'stand-in clang: no compiler here' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "clang"), []byte(clang), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(sdkEnv, sdk)
	c := runCrossCompile(context.Background(), "testdata/planted", []string{"./good"})
	if !c.ran || c.err == nil || !strings.Contains(c.report(), "FAILED") {
		t.Fatalf("with a failing clang: %+v: %s", c, c.report())
	}
	raw, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("clang was never called: %v\n%s", err, c.output)
	}
	if s := string(raw); !strings.Contains(s, "-target arm64-apple-macos"+minMacOS) || !strings.Contains(s, "-isysroot "+sdk) {
		t.Fatalf("clang was called with:\n%s", s)
	}
}
