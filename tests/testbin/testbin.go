// Package testbin builds the project's binaries once per test binary, for
// end-to-end tests that run them as real processes.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// root is the module root, found from this file's location.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Build builds the package pkg ("./guestagent") into a fresh folder readable
// by every account (sandboxes run the guest agent as another user) and
// returns the binary's path and a cleanup.
func Build(pkg, name string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "hc-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir = root()
	build.Env = append(os.Environ(), agentCgo())
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return bin, cleanup, nil
}

// MainWithAgent builds the guest agent into *path, runs the tests and exits.
func MainWithAgent(m interface{ Run() int }, path *string) {
	bin, cleanup, err := Build("./guestagent", "hivecrew-guestagent")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*path = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// agentCgo is the guest agent's cgo setting, as `make build` has it:
// static on Linux (it runs inside sandboxes' own root filesystems); the
// macOS driver needs cgo.
func agentCgo() string {
	if runtime.GOOS == "darwin" {
		return "CGO_ENABLED=1"
	}
	return "CGO_ENABLED=0"
}

// BuildAll builds hivecrew, hivecrew-helper and hivecrew-guestagent into
// one fresh folder (the helper finds the guest agent, and the CLI the
// helper, next to itself) and returns it and a cleanup.
func BuildAll() (string, func(), error) {
	dir, err := os.MkdirTemp("", "hc-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	for pkg, name := range map[string]string{"./app": "hivecrew", "./xpchelper": "hivecrew-helper", "./guestagent": "hivecrew-guestagent"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		build.Dir = root()
		if name == "hivecrew-guestagent" {
			build.Env = append(os.Environ(), agentCgo()) // as make build does
		}
		if out, err := build.CombinedOutput(); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("build %s: %v\n%s", pkg, err, out)
		}
	}
	return dir, cleanup, nil
}
