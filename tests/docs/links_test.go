package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// pages are the documents whose links are checked: README.md and every
// page of docs/, relative to the module's root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 5 {
		t.Fatalf("docs/ has %d pages", len(docs))
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel)
	}
	return out
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	fence      = regexp.MustCompile("(?ms)^```.*?^```")
	inlineCode = regexp.MustCompile("`[^`]*`")
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// prose is a Markdown text without its code blocks and code spans, where
// brackets and parentheses are not links.
func prose(md string) string {
	return inlineCode.ReplaceAllString(fence.ReplaceAllString(md, ""), "")
}

// anchors are the ids GitHub gives a page's headings: lower case, only
// letters, digits, spaces, hyphens and underscores kept, spaces as
// hyphens, and -1, -2 ... after a repeated one.
func anchors(md string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(md, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			seen[id] = n + 1
			id += "-" + strconv.Itoa(n)
		} else {
			seen[id] = 1
		}
		ids[id] = true
	}
	return ids
}

// TestDocLinksResolve: every relative link in README.md and docs/ names a
// file or folder of the repository, and every #anchor a heading of the
// page it names.
func TestDocLinksResolve(t *testing.T) {
	checked := 0
	for _, page := range pages(t) {
		for _, m := range link.FindAllStringSubmatch(prose(read(t, page)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			rel := page
			if path != "" {
				rel = filepath.Join(filepath.Dir(page), path)
				if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
					t.Errorf("%s: the link to %s leads nowhere (%v)", page, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(rel, ".md") {
				t.Errorf("%s: the link %s has an anchor into a file that is not Markdown", page, target)
			} else if !anchors(read(t, rel))[anchor] {
				t.Errorf("%s: the link %s names no heading of %s", page, target, rel)
			}
		}
	}
	if checked < 30 {
		t.Errorf("only %d relative links checked: the link pattern no longer finds them", checked)
	}
}

// TestEveryDocsPageIsLinkedFromTheREADME: no page of docs/ is an orphan,
// and each leads back to the README.
func TestEveryDocsPageIsLinkedFromTheREADME(t *testing.T) {
	readme := prose(read(t, "README.md"))
	var linked []string
	for _, m := range link.FindAllStringSubmatch(readme, -1) {
		path, _, _ := strings.Cut(m[1], "#")
		linked = append(linked, filepath.Clean(path))
	}
	for _, page := range pages(t)[1:] {
		if !slices.Contains(linked, page) {
			t.Errorf("README.md does not link to %s", page)
		}
		if !strings.Contains(prose(read(t, page)), "](../README.md") {
			t.Errorf("%s does not link back to the README", page)
		}
	}
}
