// Package docs tests the documentation against the code and against itself:
// docs/architecture.md draws every package of the module on its floor, and
// the drawing must be true (no package below one of its imports); every
// relative link in README.md and docs/ leads to a file that exists, and
// every #anchor to a heading of it; the README keeps what a newcomer needs.
package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/hivecrew/hivecrew"

// root is the module's root, from this package's folder.
const root = "../.."

// platforms are the builds whose imports count: a darwin file's imports
// hold the floors as a Linux file's do.
var platforms = [][]string{
	{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1"},
	{"GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=1"},
}

// drawn reports whether a package belongs on the floors: every package of
// the module but the test helpers under tests/.
func drawn(rel string) bool { return rel != "tests" && !strings.HasPrefix(rel, "tests/") }

// moduleImports lists the module's packages (relative to the module, "."
// for its root) with the module packages their own files import, on every
// platform together.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	imports := map[string][]string{}
	for _, env := range platforms {
		cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Error", "./...")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (%v): %v\n%s", env, err, stderr.String())
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				ImportPath string
				Imports    []string
				Error      *struct{ Err string }
			}
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if p.Error != nil && !strings.Contains(p.Error.Err, "build constraints exclude all Go files") {
				t.Fatalf("go list %s (%v): %s", p.ImportPath, env, p.Error.Err)
			}
			rel := relative(p.ImportPath)
			if _, seen := imports[rel]; !seen {
				imports[rel] = nil
			}
			for _, imp := range p.Imports {
				if r := relative(imp); r != "" && !slices.Contains(imports[rel], r) {
					imports[rel] = append(imports[rel], r)
				}
			}
		}
	}
	if len(imports) < 20 {
		t.Fatalf("go list found only %d packages", len(imports))
	}
	return imports
}

// relative is an import path relative to the module ("" for another
// module's package).
func relative(path string) string {
	if path == module {
		return "."
	}
	if rel, ok := strings.CutPrefix(path, module+"/"); ok {
		return rel
	}
	return ""
}

var floorLine = regexp.MustCompile(`^floor (\d+)\s+(.*)$`)

// floors reads the drawing of docs/architecture.md: the code block after
// <!-- floors -->, a line "floor N pkg pkg ..." and its indented
// continuation lines per floor.
func floors(t *testing.T, doc string) map[string]int {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- floors -->\n```\n")
	if !ok {
		t.Fatal("docs/architecture.md has no <!-- floors --> drawing")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the floors drawing does not end")
	}
	on := map[string]int{}
	floor := -1
	for i, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		names := line
		if m := floorLine.FindStringSubmatch(line); m != nil {
			floor, _ = strconv.Atoi(m[1])
			names = m[2]
		} else if floor < 0 || strings.TrimSpace(line) == "" || line[0] != ' ' {
			t.Fatalf("floors drawing, line %d: %q is neither a floor nor its continuation", i+1, line)
		}
		for _, name := range strings.Fields(names) {
			if f, dup := on[name]; dup {
				t.Errorf("floors drawing: %s is on floor %d and floor %d", name, f, floor)
			}
			on[name] = floor
		}
	}
	return on
}

// TestArchitectureFloorsAreTrue: every package of the module is drawn on
// a floor, only packages that exist are drawn, and every package stands
// above each package of ours it imports.
func TestArchitectureFloorsAreTrue(t *testing.T) {
	doc, err := os.ReadFile(root + "/docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	on := floors(t, string(doc))
	imports := moduleImports(t)
	var pkgs []string
	for p := range imports {
		if drawn(p) {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		f, ok := on[p]
		if !ok {
			t.Errorf("docs/architecture.md: %s is on no floor (it imports %s)", p, describe(imports[p], on))
			continue
		}
		for _, imp := range imports[p] {
			if g, ok := on[imp]; ok && g >= f {
				t.Errorf("docs/architecture.md: %s (floor %d) imports %s (floor %d): it must stand higher", p, f, imp, g)
			} else if !ok && drawn(imp) {
				t.Errorf("docs/architecture.md: %s imports %s, which is on no floor", p, imp)
			}
		}
	}
	for name := range on {
		if _, ok := imports[name]; !ok || !drawn(name) {
			t.Errorf("docs/architecture.md draws %s, which is not a package of the module outside tests/", name)
		}
	}
}

// describe names imports with their floors, for the message that asks
// for a missing package to be drawn.
func describe(imps []string, on map[string]int) string {
	if len(imps) == 0 {
		return "nothing of ours: floor 0"
	}
	var parts []string
	for _, imp := range imps {
		if f, ok := on[imp]; ok {
			parts = append(parts, fmt.Sprintf("%s, floor %d", imp, f))
		} else {
			parts = append(parts, imp+", not drawn")
		}
	}
	return strings.Join(parts, "; ")
}
