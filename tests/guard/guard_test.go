// Package guard holds tests on the code base itself: documentation and the
// dependency boundaries between binaries.
package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/hivecrew/hivecrew"

type pkg struct {
	ImportPath   string
	Dir          string
	Name         string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
	Deps         []string
}

// goList runs `go list -json` from the module root with extra environment.
func goList(t *testing.T, env []string, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

var platforms = map[string][]string{
	"linux":  {"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1"},
	"darwin": {"GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=1"},
}

// TestEveryPackageHasADocComment: every package, on every platform, says what
// it is for in a package doc comment.
func TestEveryPackageHasADocComment(t *testing.T) {
	for osName, env := range platforms {
		pkgs := goList(t, env, "./...")
		if len(pkgs) < 5 {
			t.Fatalf("%s: only %d packages listed", osName, len(pkgs))
		}
		for _, p := range pkgs {
			files := append(append(append([]string{}, p.GoFiles...), p.CgoFiles...), p.TestGoFiles...)
			if hasDoc(t, p.Dir, files) {
				continue
			}
			t.Errorf("%s (%s): no package doc comment (add one, in doc.go where there are platform files)", p.ImportPath, osName)
		}
	}
}

func hasDoc(t *testing.T, dir string, files []string) bool {
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			return true
		}
	}
	return false
}

// forbidden returns the dependencies of importPath (on one platform) that
// start with any of the prefixes.
func forbidden(t *testing.T, env []string, importPath string, prefixes []string) []string {
	ps := goList(t, env, "-deps=false", importPath)
	if len(ps) != 1 {
		t.Fatalf("go list %s: %d packages", importPath, len(ps))
	}
	var bad []string
	for _, dep := range append(ps[0].Deps, importPath) {
		for _, pre := range prefixes {
			if dep == pre || strings.HasPrefix(dep, pre+"/") {
				bad = append(bad, dep)
			}
		}
	}
	return bad
}

// TestGuestAgentStaysSmall: the binary that runs inside every guest imports
// nothing of the host's store, LLM client, API or VM layer, and no database,
// LLM or virtualization library.
func TestGuestAgentStaysSmall(t *testing.T) {
	prefixes := []string{
		module + "/core/store", module + "/core/llm", module + "/core/api", module + "/core/vm",
		module + "/core/daemon", module + "/core/orchestrator", module + "/core/agent",
		"gorm.io", "github.com/mattn/go-sqlite3", "github.com/sashabaranov/go-openai",
		"github.com/Code-Hex/vz", "github.com/progrium/darwinkit", "github.com/keybase/go-keychain",
	}
	for osName, env := range platforms {
		if bad := forbidden(t, env, module+"/guestagent", prefixes); len(bad) > 0 {
			t.Errorf("%s: hivecrew-guestagent imports %v", osName, bad)
		}
	}
}

// TestAppImportsNoVirtualization: the CLI and menu-bar app are thin clients;
// only the helper links the virtualization framework.
func TestAppImportsNoVirtualization(t *testing.T) {
	prefixes := []string{"github.com/Code-Hex/vz", module + "/core/vm/vz"}
	for osName, env := range platforms {
		if bad := forbidden(t, env, module+"/app", prefixes); len(bad) > 0 {
			t.Errorf("%s: hivecrew (app/CLI) imports %v", osName, bad)
		}
	}
}
