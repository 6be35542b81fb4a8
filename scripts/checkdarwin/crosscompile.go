package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

// The type-check fakes `import "C"`: it cannot see the cgo calls' C
// argument types or compile the Objective-C. With HIVECREW_DARWIN_SDK set
// to a macOS SDK (MacOSX.sdk, from a Mac's Xcode or command-line tools, or
// one assembled on Linux), check-darwin also builds every package for
// darwin/arm64 with cgo and clang, and links every main package: go build
// links each main package it builds (the executables go to a temporary
// folder, are checked to be arm64 Mach-O executables, and are removed).
// cgo's own checks of Go to C arguments and clang's of the Objective-C then
// run, with the SDK's deprecation and availability warnings, and the link
// finds every framework symbol the code names. On a Mac, Xcode's clang,
// ld and strip do it. On Linux, Debian's clang-19 and lld-19 do
// (toolchain.go): ld64.lld through -fuse-ld=lld, and llvm-strip as the
// strip Go's darwin link runs (the system's strip does not read Mach-O).
// Without the SDK it says so plainly: not run.

// crossCompile is the outcome of the clang build.
type crossCompile struct {
	ran    bool
	reason string // why it did not run
	err    error
	output string
	took   time.Duration
	sdk    string // the SDK's version
	// packages says, package by package, what compiled and linked.
	packages []pkgOutcome
	// disabled lists the releases of vz's "macOS N API has been disabled"
	// messages (an uncached build prints them): its code for those
	// releases was compiled out against an older SDK.
	disabled []string
}

// Outcomes of one package.
const (
	outCompiled = "compiled"
	outLinked   = "linked"
	outFailed   = "FAILED"
	outNotBuilt = "not built"
)

// pkgOutcome is what happened to one package of the build.
type pkgOutcome struct {
	ImportPath string
	Result     string // outCompiled, outLinked, outFailed, outNotBuilt
	Detail     string // the executable, the failure, or the dependency that failed
}

func (c crossCompile) report() string {
	if !c.ran {
		return "check-darwin: clang cross-compile and link (cgo argument checks, Objective-C, framework symbols): not run: " + c.reason
	}
	var b strings.Builder
	if c.err != nil && strings.TrimSpace(c.output) != "" {
		b.WriteString(strings.TrimSpace(c.output) + "\n")
	}
	counts := map[string]int{}
	for _, p := range c.packages {
		counts[p.Result]++
		line := fmt.Sprintf("  %-9s %s", p.Result, p.ImportPath)
		if p.Detail != "" {
			line += ": " + p.Detail
		}
		b.WriteString(line + "\n")
	}
	if olderThan(c.sdk, minMacOS) {
		out := "its newer code"
		if len(c.disabled) > 0 {
			out = "its " + strings.Join(c.disabled, ", ") + " code"
		}
		fmt.Fprintf(&b, "check-darwin: the SDK is macOS %s, older than %s: vz compiles %s out against it, which this check then does not cover (make app refuses such an SDK)\n",
			c.sdk, minMacOS, out)
	}
	summary := fmt.Sprintf("%d compiled, %d linked, %d failed, %d not built", counts[outCompiled], counts[outLinked], counts[outFailed], counts[outNotBuilt])
	if c.err != nil {
		fmt.Fprintf(&b, "check-darwin: clang cross-compile and link for darwin/arm64 (macOS %s SDK, deployment target %s): %s: FAILED: %v", c.sdk, minMacOS, summary, c.err)
		return b.String()
	}
	fmt.Fprintf(&b, "check-darwin: clang cross-compile and link for darwin/arm64 (macOS %s SDK, deployment target %s) in %s: %s: ok",
		c.sdk, minMacOS, c.took.Round(time.Second), summary)
	return b.String()
}

// crossCompileCmd returns the build of patterns in dir for darwin/arm64
// against sdk with tc, its executables written to out ("": no main
// package among them).
func crossCompileCmd(ctx context.Context, dir, sdk string, tc toolchain, out string, patterns []string) *exec.Cmd {
	cc := []string{tc.clang, "-target", "arm64-apple-macos" + minMacOS, "-isysroot", sdk,
		"-F" + filepath.Join(sdk, "System", "Library", "Frameworks"), "-Wno-unused-command-line-argument"}
	if tc.lld {
		cc = append(cc, "-fuse-ld=lld")
	}
	// -o a folder: every main package is linked and written there; the
	// other packages are compiled (go build links main packages whenever
	// it builds them, one or several; with -o it refuses to build none).
	args := []string{"build", "-json"}
	if out != "" {
		args = append(args, "-o", out+string(filepath.Separator))
	}
	args = append(args, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	env := append(os.Environ(), append(targetEnv, "CC="+strings.Join(cc, " "), "CXX="+strings.Join(cc, " "),
		"CGO_CFLAGS=-O1 -Wdeprecated-declarations", "SDKROOT="+sdk)...)
	if tc.links != "" {
		// The links come first: Go's darwin link asks clang for strip and
		// dsymutil (clang --print-prog-name), which finds them on PATH.
		env = append(env, "PATH="+tc.links+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd.Env = env
	return cmd
}

// runCrossCompile runs the clang build when sdkEnv is set. pkgs are the
// packages the type-check listed (go list -deps), for the report.
func runCrossCompile(ctx context.Context, dir string, patterns []string, pkgs []listedPackage) crossCompile {
	sdk := os.Getenv(sdkEnv)
	if sdk == "" {
		return crossCompile{reason: sdkEnv + " is not set (point it at a MacOSX.sdk folder to compile the cgo and Objective-C code with clang and link the executables)"}
	}
	version, err := sdkVersion(sdk)
	if err != nil {
		return crossCompile{ran: true, err: fmt.Errorf("%s=%s: %w", sdkEnv, sdk, err)}
	}
	tmp, err := os.MkdirTemp("", "checkdarwin-")
	if err != nil {
		return crossCompile{ran: true, sdk: version, err: err}
	}
	defer os.RemoveAll(tmp)
	tc, err := findToolchain(runtime.GOOS, filepath.Join(tmp, "tools"))
	if err != nil {
		return crossCompile{ran: true, sdk: version, err: err}
	}
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return crossCompile{ran: true, sdk: version, err: err}
	}
	start := time.Now()
	out := ""
	for _, p := range pkgs {
		if !p.DepOnly && p.Name == "main" {
			out = bin
		}
	}
	cmd := crossCompileCmd(ctx, dir, sdk, tc, out, patterns)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	events, output, perr := readBuildEvents(&stdout)
	output += stderr.String()
	c := crossCompile{ran: true, err: err, output: output, took: time.Since(start), sdk: version, disabled: disabledAPIs(output)}
	if perr != nil && c.err == nil {
		c.err = perr
	}
	c.packages = outcomes(pkgs, events, bin, err != nil)
	for _, p := range c.packages {
		if p.Result == outFailed && c.err == nil {
			c.err = fmt.Errorf("%s: %s", p.ImportPath, p.Detail)
		}
	}
	return c
}

// buildEvent is one line of go build -json (go help buildjson).
type buildEvent struct {
	ImportPath string
	Action     string // build-output, build-fail
	Output     string
}

// readBuildEvents reads go build -json's events and the text they carry.
func readBuildEvents(r io.Reader) ([]buildEvent, string, error) {
	var events []buildEvent
	var text strings.Builder
	dec := json.NewDecoder(r)
	for {
		var e buildEvent
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			return events, text.String(), nil
		} else if err != nil {
			return events, text.String(), fmt.Errorf("read go build -json: %w", err)
		}
		events = append(events, e)
		text.WriteString(e.Output)
	}
}

// outcomes says what happened to each own (not DepOnly) package, and to
// each dependency that failed (a module's cgo, runtime/cgo): FAILED
// (its build-fail event, with its output), not built (a package it
// depends on failed), linked (a main package whose executable is an arm64
// Mach-O executable in bin) or compiled. When the build failed and no
// package says so (go stopped before building any), none was built.
func outcomes(pkgs []listedPackage, events []buildEvent, bin string, buildFailed bool) []pkgOutcome {
	failed := map[string]bool{}
	said := map[string]*strings.Builder{}
	for _, e := range events {
		if e.Action == "build-fail" {
			failed[e.ImportPath] = true
		}
		if e.Output != "" {
			if said[e.ImportPath] == nil {
				said[e.ImportPath] = &strings.Builder{}
			}
			said[e.ImportPath].WriteString(e.Output)
		}
	}
	var out []pkgOutcome
	own := map[string]bool{}
	for _, p := range pkgs {
		if p.DepOnly {
			continue
		}
		own[p.ImportPath] = true
		o := pkgOutcome{ImportPath: p.ImportPath, Result: outCompiled}
		switch {
		case buildFailed && len(failed) == 0:
			o.Result, o.Detail = outNotBuilt, "go build stopped before building it (its output is above)"
		case failed[p.ImportPath]:
			o.Result, o.Detail = outFailed, firstLines(said[p.ImportPath], 12)
		case firstFailed(p.Deps, failed) != "":
			o.Result, o.Detail = outNotBuilt, "depends on "+firstFailed(p.Deps, failed)+", which failed"
		case p.Name == "main":
			exe := filepath.Join(bin, filepath.Base(p.ImportPath))
			if desc, err := describeExecutable(exe); err != nil {
				o.Result, o.Detail = outFailed, err.Error()
			} else {
				o.Result, o.Detail = outLinked, desc
			}
		}
		if b := said[p.ImportPath]; (o.Result == outCompiled || o.Result == outLinked) && b != nil {
			// What clang or cgo said of an own package that built:
			// deprecation and availability warnings.
			o.Detail = strings.TrimPrefix(o.Detail+"; it said: ", "; ") + firstLines(b, 12)
		}
		out = append(out, o)
	}
	var deps []string
	for path := range failed {
		if !own[path] {
			deps = append(deps, path)
		}
	}
	sort.Strings(deps)
	for _, path := range deps {
		out = append(out, pkgOutcome{ImportPath: path, Result: outFailed, Detail: "(a dependency) " + firstLines(said[path], 12)})
	}
	return out
}

// firstFailed returns the first of deps that failed, in sorted order.
func firstFailed(deps []string, failed map[string]bool) string {
	var hit []string
	for _, d := range deps {
		if failed[d] {
			hit = append(hit, d)
		}
	}
	if len(hit) == 0 {
		return ""
	}
	sort.Strings(hit)
	return hit[0]
}

// firstLines returns the first n lines of b's text, on one line each.
func firstLines(b *strings.Builder, n int) string {
	if b == nil {
		return "the build failed (go build said no more)"
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… (%d more lines above)", len(lines)-n))
	}
	return strings.Join(lines, "\n            ")
}

var disabledAPI = regexp.MustCompile(`macOS ([0-9.]+) API has been disabled`)

// disabledAPIs lists the macOS releases whose code vz compiled out (its
// virtualization_helper.h says so for an SDK older than them).
func disabledAPIs(output string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range disabledAPI.FindAllStringSubmatch(output, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, "macOS "+m[1])
		}
	}
	return out
}
