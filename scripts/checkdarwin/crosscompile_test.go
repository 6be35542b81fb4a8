package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeSDK makes a folder that reads as a macOS SDK of version v.
func writeSDK(t *testing.T, v string) string {
	t.Helper()
	sdk := t.TempDir()
	if err := os.WriteFile(filepath.Join(sdk, "SDKSettings.json"), []byte(`{"Version":"`+v+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return sdk
}

// listed is go list's view of the planted module, as the type-check has it.
func listed(t *testing.T, dir string, patterns ...string) []listedPackage {
	t.Helper()
	pkgs, err := goList(context.Background(), dir, patterns)
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestCrossCompileSaysWhenItDidNotRun: without a macOS SDK the clang build
// is reported as not run, never as passed; a folder that is not an SDK is
// an error.
func TestCrossCompileSaysWhenItDidNotRun(t *testing.T) {
	t.Setenv(sdkEnv, "")
	c := runCrossCompile(context.Background(), "testdata/planted", []string{"./..."}, nil)
	if c.ran || !strings.Contains(c.report(), "not run: "+sdkEnv+" is not set") {
		t.Fatalf("without an SDK: %+v: %s", c, c.report())
	}
	t.Setenv(sdkEnv, t.TempDir())
	c = runCrossCompile(context.Background(), "testdata/planted", []string{"./..."}, nil)
	if !c.ran || c.err == nil || !strings.Contains(c.report(), "FAILED") || !strings.Contains(c.err.Error(), "not a macOS SDK") {
		t.Fatalf("with a folder that is no SDK: %+v: %s", c, c.report())
	}
}

// TestCrossCompileUsesClangWithTheSDK: given an SDK, the build runs cgo
// with clang for arm64-apple-macos15.0 against that SDK, links with lld off
// a Mac, and puts llvm-strip first on PATH as strip (what Go's darwin link
// finds through clang). A stand-in clang records how it was called and
// what strip it would find (no macOS SDK can be had here); it fails, and
// the failure is reported, for the package it failed in.
func TestCrossCompileUsesClangWithTheSDK(t *testing.T) {
	sdk := writeSDK(t, "15.2")
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script("clang", "echo \"$@\" >> "+calls+"\necho \"strip: $(readlink \"$(command -v strip)\")\" >> "+calls+
		"\necho 'stand-in clang: no compiler here' >&2\nexit 1\n")
	for _, name := range []string{"ld64.lld", "llvm-strip", "dsymutil"} {
		script(name, "exit 1\n")
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(sdkEnv, sdk)
	c := runCrossCompile(context.Background(), "testdata/planted", []string{"./good"}, listed(t, "testdata/planted", "./good"))
	if !c.ran || c.err == nil || !strings.Contains(c.report(), "FAILED") {
		t.Fatalf("with a failing clang: %+v: %s", c, c.report())
	}
	// The first C compile is runtime/cgo's: it fails, and the planted
	// package, which needs it, is not built.
	got := map[string]pkgOutcome{}
	for _, p := range c.packages {
		got[p.ImportPath] = p
	}
	if o := got["runtime/cgo"]; o.Result != outFailed || !strings.Contains(o.Detail, "stand-in clang: no compiler here") {
		t.Errorf("runtime/cgo: %+v", o)
	}
	if o := got["example.com/planted/good"]; o.Result != outNotBuilt || !strings.Contains(o.Detail, "depends on runtime/cgo") {
		t.Errorf("the planted package: %+v", o)
	}
	report := c.report()
	if !strings.Contains(report, "FAILED    runtime/cgo: (a dependency)") || !strings.Contains(report, "not built example.com/planted/good") ||
		!strings.Contains(report, "0 compiled, 0 linked, 1 failed, 1 not built: FAILED") {
		t.Fatalf("report:\n%s", report)
	}
	raw, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("clang was never called: %v\n%s", err, c.output)
	}
	s := string(raw)
	if !strings.Contains(s, "-target arm64-apple-macos"+minMacOS) || !strings.Contains(s, "-isysroot "+sdk) {
		t.Fatalf("clang was called with:\n%s", s)
	}
	if runtime.GOOS != "darwin" {
		if !strings.Contains(s, "-fuse-ld=lld") {
			t.Errorf("off a Mac clang was not told to link with lld:\n%s", s)
		}
		if !strings.Contains(s, "strip: "+filepath.Join(bin, "llvm-strip")) {
			t.Errorf("the strip on the build's PATH is not llvm-strip:\n%s", s)
		}
	}
}

// TestCrossCompileNamesWhatIsMissing: off a Mac, a missing linker is named
// with the Debian package that has it, before anything is built.
func TestCrossCompileNamesWhatIsMissing(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("a Mac links with Xcode's tools")
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "clang"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin) // no ld64.lld anywhere
	_, err := findToolchain("linux", filepath.Join(t.TempDir(), "links"))
	if err == nil || !strings.Contains(err.Error(), "ld64.lld") || !strings.Contains(err.Error(), "apt-get install lld-19") {
		t.Fatalf("without ld64.lld: %v", err)
	}
}

// TestOutcomesPackageByPackage: the report says, package by package, what
// failed (with its output), what was not built because a dependency
// failed, which executables linked (a real arm64 Mach-O, with its minimum
// macOS) and what compiled; a main package whose executable is missing or
// not Mach-O failed.
func TestOutcomesPackageByPackage(t *testing.T) {
	bin := t.TempDir()
	// A real darwin/arm64 executable: Go's own linker needs no C toolchain.
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "hello"), ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build a darwin executable: %v\n%s", err, out)
	}
	// A Linux executable where a Mach-O one should be.
	linux := exec.Command("go", "build", "-o", filepath.Join(bin, "notmacho"), ".")
	linux.Dir = mod
	linux.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := linux.CombinedOutput(); err != nil {
		t.Fatalf("build a linux executable: %v\n%s", err, out)
	}
	pkgs := []listedPackage{
		{ImportPath: "std/fmt", DepOnly: true},
		{ImportPath: "x/lib", Name: "lib"},
		{ImportPath: "x/broken", Name: "broken"},
		{ImportPath: "x/cmd/hello", Name: "main", Deps: []string{"x/lib"}},
		{ImportPath: "x/cmd/uses", Name: "main", Deps: []string{"x/lib", "x/broken"}},
		{ImportPath: "x/cmd/notmacho", Name: "main"},
		{ImportPath: "x/cmd/gone", Name: "main"},
	}
	events := []buildEvent{
		{ImportPath: "x/broken", Action: "build-output", Output: "# x/broken\nbroken.m:3:1: error: unknown type name 'NSWindw'\n"},
		{ImportPath: "x/broken", Action: "build-fail"},
		{ImportPath: "x/lib", Action: "build-output", Output: "# x/lib\nlib.m:9:2: warning: 'activateIgnoringOtherApps:' is deprecated\n"},
	}
	got := map[string]pkgOutcome{}
	for _, o := range outcomes(pkgs, events, bin, true) {
		got[o.ImportPath] = o
	}
	if len(got) != 6 {
		t.Fatalf("outcomes for %d packages, want the 6 own ones: %+v", len(got), got)
	}
	check := func(pkg, result, detail string) {
		t.Helper()
		if o := got[pkg]; o.Result != result || !strings.Contains(o.Detail, detail) {
			t.Errorf("%s: %s %q, want %s with %q", pkg, o.Result, o.Detail, result, detail)
		}
	}
	check("x/lib", outCompiled, "it said: # x/lib")
	check("x/lib", outCompiled, "lib.m:9:2: warning: 'activateIgnoringOtherApps:' is deprecated")
	check("x/broken", outFailed, "unknown type name 'NSWindw'")
	check("x/cmd/hello", outLinked, "hello, arm64 Mach-O executable")
	check("x/cmd/hello", outLinked, "minimum macOS 1") // Go's linker writes LC_BUILD_VERSION
	check("x/cmd/uses", outNotBuilt, "depends on x/broken")
	check("x/cmd/notmacho", outFailed, "not a Mach-O file")
	check("x/cmd/gone", outFailed, "no executable was written")

	// go stopped before building anything: nothing is said to have compiled.
	for _, o := range outcomes(pkgs, nil, bin, true) {
		if o.Result != outNotBuilt {
			t.Errorf("%s: %s after go build stopped early, want %s", o.ImportPath, o.Result, outNotBuilt)
		}
	}
	c := crossCompile{ran: true, sdk: "12.0", packages: outcomes(pkgs, events, bin, true),
		disabled: disabledAPIs("h:25:9: warning: macOS 12.3 API has been disabled\nh:46:9: warning: macOS 15 API has been disabled\nh:25:9: warning: macOS 12.3 API has been disabled")}
	if r := c.report(); !strings.Contains(r, "vz compiles its macOS 12.3, macOS 15 code out") || !strings.Contains(r, "1 compiled, 1 linked, 3 failed, 1 not built") {
		t.Errorf("report:\n%s", r)
	}
	// A cached build prints nothing: the SDK's age is said all the same,
	// and not for an SDK as new as minMacOS.
	c.disabled = nil
	if r := c.report(); !strings.Contains(r, "the SDK is macOS 12.0, older than "+minMacOS+": vz compiles its newer code out") {
		t.Errorf("report of a cached build:\n%s", r)
	}
	c.sdk = minMacOS
	if r := c.report(); strings.Contains(r, "older than") {
		t.Errorf("report with a macOS %s SDK:\n%s", minMacOS, r)
	}
}
