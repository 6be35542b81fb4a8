package docs

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMEKeepsTheFirstHour: the README still says what Hivecrew is,
// gives the two commands, says plainly what has and has not run on a Mac,
// and holds the walkthrough tests/readme runs.
func TestREADMEKeepsTheFirstHour(t *testing.T) {
	readme := read(t, "README.md")
	for _, want := range []string{
		"Hivecrew runs AI computer-use agents safely",
		"## Two commands",
		"make run    #",
		"make test   #",
		"nothing of the macOS path has run on a Mac yet",
		"## A first hour",
		"<!-- walkthrough -->",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md no longer says %q", want)
		}
	}
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines: the reference belongs in docs/", n)
	}
}

var makeTarget = regexp.MustCompile("`make ([a-z-]+)")

// TestMakeTargetsTheDocsNameExist: every `make TARGET` the README and
// docs/ name is a target of the Makefile.
func TestMakeTargetsTheDocsNameExist(t *testing.T) {
	var targets []string
	for _, line := range strings.Split(read(t, "Makefile"), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && regexp.MustCompile(`^[a-z-]+$`).MatchString(name) {
			targets = append(targets, name)
		}
	}
	if !slices.Contains(targets, "run") || !slices.Contains(targets, "test") {
		t.Fatalf("the Makefile's targets read as %v", targets)
	}
	for _, page := range pages(t) {
		for _, m := range makeTarget.FindAllStringSubmatch(read(t, page), -1) {
			if !slices.Contains(targets, m[1]) {
				t.Errorf("%s names `make %s`, which the Makefile does not have", page, m[1])
			}
		}
	}
}
