package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyTree copies the planted module into a temporary directory so the test
// can fix the planted error in place.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestPlantedErrorRedThenGreen: the planted darwin-only type error fails the
// check (while a linux build of the same package passes), and the same
// package passes once the error is fixed.
func TestPlantedErrorRedThenGreen(t *testing.T) {
	ctx := context.Background()
	mod := copyTree(t, "testdata/planted")

	// The linux build is fine: only a darwin check can catch this.
	build := exec.Command("go", "build", "./...")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("linux build of the planted module failed: %v\n%s", err, out)
	}

	red, err := check(ctx, mod, []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	if len(red.Errors) != 1 || !strings.Contains(red.Errors[0], "bad_darwin.go:10") || !strings.Contains(red.Errors[0], "cannot use \"three\"") {
		t.Fatalf("red run errors = %q, want the planted error at bad_darwin.go:10", red.Errors)
	}
	if red.Own != 2 || red.Darwin != 2 {
		t.Fatalf("red run checked %d packages with %d darwin files, want 2 and 2", red.Own, red.Darwin)
	}

	file := filepath.Join(mod, "bad", "bad_darwin.go")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(string(src), `var total int = "three"`, `var total int = 3`, 1)
	if fixed == string(src) {
		t.Fatal("planted line not found")
	}
	if err := os.WriteFile(file, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	green, err := check(ctx, mod, []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	if len(green.Errors) != 0 {
		t.Fatalf("green run errors = %q, want none", green.Errors)
	}
}

// TestUnknownPackageIsAnError: a pattern that matches nothing is reported,
// not passed silently.
func TestUnknownPackageIsAnError(t *testing.T) {
	res, err := check(context.Background(), "testdata/planted", []string{"./nosuch"})
	if err == nil && len(res.Errors) == 0 {
		t.Fatal("checking a missing package passed")
	}
}
