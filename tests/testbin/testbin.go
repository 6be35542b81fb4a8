// Package testbin builds the project's binaries once per test binary, for
// end-to-end tests that run them as real processes. With $HIVECREW_TEST_BIN
// set to a folder of binaries built from this tree (`make e2e` sets it to
// bin/, just built by `make build`) they are linked or copied from there
// instead of being built again by every package.
package testbin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// PrebuiltEnv names the folder (an absolute path) of prebuilt binaries
// (hivecrew, hivecrew-helper, hivecrew-guestagent) to use instead of
// building; the caller vouches that they are built from this tree.
const PrebuiltEnv = "HIVECREW_TEST_BIN"

// prebuiltNames are the binaries $HIVECREW_TEST_BIN holds, by package.
var prebuiltNames = map[string]string{"./app": "hivecrew", "./xpchelper": "hivecrew-helper", "./guestagent": "hivecrew-guestagent"}

// install puts the binary of pkg at dst: from $HIVECREW_TEST_BIN when it
// is set and pkg is one it holds, else built with go build (env added to
// the build's environment).
func install(pkg, dst string, env ...string) error {
	if from := os.Getenv(PrebuiltEnv); from != "" {
		if !filepath.IsAbs(from) {
			return fmt.Errorf("$%s is %q: it must be an absolute path (tests run in their package's folder)", PrebuiltEnv, from)
		}
		if name, ok := prebuiltNames[pkg]; ok {
			if err := linkOrCopy(filepath.Join(from, name), dst); err != nil {
				return fmt.Errorf("prebuilt %s ($%s): %w", name, PrebuiltEnv, err)
			}
			return nil
		}
	}
	build := exec.Command("go", "build", "-o", dst, pkg)
	build.Dir = root()
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// linkOrCopy hard-links src to dst, or copies it (mode kept) when they are
// on different file systems.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

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
	if err := install(pkg, bin, agentCgo()); err != nil {
		cleanup()
		return "", nil, err
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
	for pkg, name := range prebuiltNames {
		var env []string
		if name == "hivecrew-guestagent" {
			env = []string{agentCgo()} // as make build does
		}
		if err := install(pkg, filepath.Join(dir, name), env...); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	return dir, cleanup, nil
}
