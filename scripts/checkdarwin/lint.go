package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The lint finds, in the project's darwin-only code (Go files, cgo
// preambles and the Objective-C, C and header files of its packages),
// Apple APIs that compile but fail on a real Mac: deprecated ones that do
// nothing or are gone on the macOS versions Hivecrew supports, and ones
// that return nil (or raise) where a caller may not expect it. A deliberate
// use (a fallback behind a version check, a nil check on the next line)
// is marked on its line or the line before with
//
//	// checkdarwin:allow <why>
//
// and the reason is required.

// lintRule is one API the lint looks for.
type lintRule struct {
	re  *regexp.Regexp
	why string
	// nilable says the API may return nil: a nil check on its line or the
	// next (== nil, != nil, Objective-C's a ?: b, Go's IsNil()) deals with
	// it, as a marker does.
	nilable bool
}

var nilCheck = regexp.MustCompile(`[!=]=\s*nil\b|\bnil\s*[!=]=|\?:|IsNil\(\)`)

var lintRules = []lintRule{
	// Deprecated: no effect or gone on the macOS versions Hivecrew runs on.
	{re: regexp.MustCompile(`\bNSUserNotification(Center)?\b`), why: "deprecated since macOS 11, and nil without a bundle id: use UNUserNotificationCenter"},
	{re: regexp.MustCompile(`\b[Aa]ctivateIgnoringOtherApps\b`), why: "deprecated in macOS 14, where it does nothing: use NSApplication activate after the active app yields"},
	{re: regexp.MustCompile(`\bCGWindowListCreateImage\b|\bCGDisplayCreateImage\b|\bCGDisplayStreamCreate\b`), why: "deprecated in macOS 14/15 (obsoleted for new code): use ScreenCaptureKit"},
	{re: regexp.MustCompile(`\bSMLoginItemSetEnabled\b|\bLSSharedFileList`), why: "deprecated since macOS 13: use SMAppService"},
	{re: regexp.MustCompile(`\blaunchApplication(AtURL)?:|\bopenFile:withApplication:`), why: "NSWorkspace API deprecated since macOS 11: use openApplicationAtURL:configuration:completionHandler:"},
	{re: regexp.MustCompile(`\bkUTType[A-Z]`), why: "deprecated since macOS 12: use UniformTypeIdentifiers (UTType)"},
	{re: regexp.MustCompile(`\bSecKeychain(Find|Add)[A-Za-z]*\b`), why: "the SecKeychain API is deprecated: use SecItem (go-keychain does)"},
	{re: regexp.MustCompile(`\bUIWebView\b`), why: "legacy WebKit view, deprecated: use WKWebView"},
	// Order: AppKit reads which methods a delegate has when it is set.
	{re: regexp.MustCompile(`\bmacos\.RunApp\b`), why: "installs the app delegate before its callback runs, so AppKit may never ask a handler set there (applicationShouldTerminate:): use core/macapp.Run"},
	// Nil (or an exception) where callers may not expect it.
	{re: regexp.MustCompile(`\bcurrentNotificationCenter\b|\bCurrentNotificationCenter\b`), why: "raises an exception in a process without a bundle id: check NSBundle.mainBundle.bundleIdentifier first"},
	{re: regexp.MustCompile(`\bmainScreen\b|\bScreen_MainScreen\b`), why: "nil when no display is attached (a headless guest, a closed lid): check it", nilable: true},
	{re: regexp.MustCompile(`\bbundleIdentifier\b|\bBundleIdentifier\(\)`), why: "nil for an unbundled process or app (and a message to nil answers 0, NSOrderedSame): check it", nilable: true},
	{re: regexp.MustCompile(`\blocalizedName\b|\bLocalizedName\(\)`), why: "nil for some processes (and a message to nil answers 0, NSOrderedSame): check it", nilable: true},
	{re: regexp.MustCompile(`\bfrontmostApplication\b|\bFrontmostApplication\(\)`), why: "nil while no app is frontmost (login window, screen saver): check it", nilable: true},
}

// allowMarker marks a deliberate use; what follows it is the reason.
var allowMarker = regexp.MustCompile(`checkdarwin:allow\b[ \t]*(.*)`)

// lintFiles lints the named files and returns findings as
// "file:line: message".
func lintFiles(paths []string) ([]string, error) {
	var out []string
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(b), "\n")
		at := func(i int) string {
			if i < 0 || i >= len(lines) {
				return ""
			}
			return lines[i]
		}
		for i, line := range lines {
			here, before := allowMarker.FindStringSubmatch(line), allowMarker.FindStringSubmatch(at(i-1))
			if here != nil && strings.TrimSpace(here[1]) == "" {
				out = append(out, fmt.Sprintf("%s:%d: checkdarwin:allow needs a reason after it", path, i+1))
			}
			code := stripComment(line)
			if code == "" {
				continue
			}
			for _, r := range lintRules {
				loc := r.re.FindStringIndex(code)
				if loc == nil || here != nil || before != nil {
					continue
				}
				if r.nilable && (nilCheck.MatchString(code) || nilCheck.MatchString(stripComment(at(i+1)))) {
					continue
				}
				out = append(out, fmt.Sprintf("%s:%d: %s: %s (a deliberate use: // checkdarwin:allow <why>)", path, i+1, code[loc[0]:loc[1]], r.why))
			}
		}
		if strings.HasSuffix(path, ".go") {
			out = append(out, lintDelegateOrder(path, b)...)
		}
	}
	return out, nil
}

// stripComment returns a line's code: without a // comment, and nothing
// for a line inside or opening a block comment's text (" * ...", "/* ...").
// A cgo preamble is a block comment, but its lines of C are code: only
// lines that read as comment text are dropped.
func stripComment(line string) string {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "//") || strings.HasPrefix(t, "* ") || t == "*" || strings.HasPrefix(t, "/*") && !strings.HasSuffix(t, "*/") && len(t) > 2 {
		return ""
	}
	if i := commentStart(t); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	return t
}

// commentStart finds a // that starts a comment, outside string literals
// (a URL in a string is not a comment).
func commentStart(s string) int {
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '`' || c == '\'':
			quote = c
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			return i
		}
	}
	return -1
}

// lintTargets returns the darwin-only files of own packages to lint: Go
// files that only a darwin build includes, and every Objective-C, C and
// header file of a package that has such Go files.
func lintTargets(p listedPackage, darwinGo []string) []string {
	if len(darwinGo) == 0 {
		return nil
	}
	out := append([]string{}, darwinGo...)
	for _, group := range [][]string{p.MFiles, p.CFiles, p.HFiles} {
		for _, name := range group {
			out = append(out, filepath.Join(p.Dir, name))
		}
	}
	return out
}
