package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The type-check fakes `import "C"`: it cannot see the cgo calls' C
// argument types or compile the Objective-C. With HIVECREW_DARWIN_SDK set
// to a macOS SDK (MacOSX.sdk, from a Mac's Xcode or command-line tools),
// check-darwin also builds every package for darwin/arm64 with cgo, with
// clang as the C and Objective-C compiler (Debian's clang can target
// darwin; only compiling, no linking, is needed): cgo's own checks of Go
// to C arguments and clang's of the Objective-C then run, with the SDK's
// deprecation and availability warnings. Without the SDK it says so
// plainly: not run.

// sdkEnv names the SDK folder.
const sdkEnv = "HIVECREW_DARWIN_SDK"

// minMacOS is the deployment target the darwin code is written for.
const minMacOS = "14.0"

// crossCompile is the outcome of the clang build.
type crossCompile struct {
	ran    bool
	reason string // why it did not run
	err    error
	output string
	took   time.Duration
}

func (c crossCompile) report() string {
	switch {
	case !c.ran:
		return "check-darwin: clang cross-compile (cgo argument checks, Objective-C): not run: " + c.reason
	case c.err != nil:
		return fmt.Sprintf("%s\ncheck-darwin: clang cross-compile for darwin/arm64: FAILED: %v", strings.TrimSpace(c.output), c.err)
	default:
		return fmt.Sprintf("check-darwin: clang cross-compile for darwin/arm64 (macOS %s SDK deployment target) in %s: ok", minMacOS, c.took.Round(time.Millisecond))
	}
}

// crossCompileCmd returns the build of patterns in dir for darwin/arm64
// against sdk, with clang.
func crossCompileCmd(ctx context.Context, dir, sdk, clang string, patterns []string) *exec.Cmd {
	cc := strings.Join([]string{clang, "-target", "arm64-apple-macos" + minMacOS, "-isysroot", sdk,
		"-F" + filepath.Join(sdk, "System", "Library", "Frameworks"), "-Wno-unused-command-line-argument"}, " ")
	// Several packages (./..., as make check-darwin names them) are
	// compiled and discarded: nothing is linked, so no darwin linker is
	// needed. A single main package would be linked.
	cmd := exec.CommandContext(ctx, "go", append([]string{"build"}, patterns...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(targetEnv, "CC="+cc, "CXX="+cc, "CGO_CFLAGS=-O1 -Wdeprecated-declarations", "SDKROOT="+sdk)...)
	return cmd
}

// runCrossCompile runs the clang build when sdkEnv is set.
func runCrossCompile(ctx context.Context, dir string, patterns []string) crossCompile {
	sdk := os.Getenv(sdkEnv)
	if sdk == "" {
		return crossCompile{reason: sdkEnv + " is not set (point it at a MacOSX.sdk folder to compile the cgo and Objective-C code with clang)"}
	}
	if fi, err := os.Stat(filepath.Join(sdk, "SDKSettings.json")); err != nil || fi.IsDir() {
		return crossCompile{ran: true, err: fmt.Errorf("%s=%s is not a macOS SDK (no SDKSettings.json)", sdkEnv, sdk)}
	}
	clang, err := exec.LookPath("clang")
	if err != nil {
		return crossCompile{ran: true, err: errors.New("clang is not installed (Debian: apt-get install clang)")}
	}
	start := time.Now()
	cmd := crossCompileCmd(ctx, dir, sdk, clang, patterns)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return crossCompile{ran: true, err: err, output: out.String(), took: time.Since(start)}
}
