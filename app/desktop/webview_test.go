package desktop

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// goName is darwinkit's Go name of an Objective-C selector (objc's
// selectorToGoName): each colon-separated part capitalised and joined.
func goName(sel string) string {
	var b strings.Builder
	for _, part := range strings.Split(sel, ":") {
		if part == "" {
			continue
		}
		r := []rune(part)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}

// delegateType is darwinkit's Go type implementing each protocol.
var delegateType = map[string]struct{ file, typ string }{
	"WKUIDelegate":         {"ui_delegate.gen.go", "UIDelegate"},
	"WKNavigationDelegate": {"navigation_delegate.gen.go", "NavigationDelegate"},
	"WKDownloadDelegate":   {"download_delegate.gen.go", "DownloadDelegate"},
}

// darwinkitDir is the pinned darwinkit module's folder.
func darwinkitDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/progrium/darwinkit").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Fatalf("find darwinkit: %v", err)
	}
	return dir
}

// setterCalls lists the methods called as x.Set...(...) in the package's
// darwin files.
func setterCalls(t *testing.T) map[string]bool {
	t.Helper()
	calls := map[string]bool{}
	names, _ := filepath.Glob("*_darwin.go")
	if len(names) == 0 {
		t.Fatal("no darwin files")
	}
	fset := token.NewFileSet()
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(s.Sel.Name, "Set") {
					calls[s.Sel.Name] = true
				}
			}
			return true
		})
	}
	return calls
}

// TestWebHooksAreWired answers issue 16.3: every delegate method of the
// table exists in the pinned darwinkit (a setter on its delegate type),
// the darwin code sets each one, and the darwin code sets no delegate
// method the table does not list. Without these, confirm() answers
// Cancel (so cancel and delete buttons do nothing in the app), file
// inputs and target=_blank links do nothing, and downloads fail.
func TestWebHooksAreWired(t *testing.T) {
	dk := darwinkitDir(t)
	calls := setterCalls(t)
	listed := map[string]bool{}
	for _, h := range WebHooks {
		dt, ok := delegateType[h.Protocol]
		if !ok {
			t.Errorf("%s: unknown protocol %s", h.Selector, h.Protocol)
			continue
		}
		src, err := os.ReadFile(filepath.Join(dk, "macos", "webkit", dt.file))
		if err != nil {
			t.Fatal(err)
		}
		setter := "Set" + goName(h.Selector)
		listed[setter] = true
		if !strings.Contains(string(src), "func (di *"+dt.typ+") "+setter+"(") {
			t.Errorf("darwinkit has no %s.%s for %s", dt.typ, setter, h.Selector)
		}
		if !strings.Contains(string(src), `"`+h.Selector+`"`) {
			t.Errorf("darwinkit's %s does not know the selector %s", dt.file, h.Selector)
		}
		if !calls[setter] {
			t.Errorf("%s is not wired in the darwin files (without it: %s)", setter, h.Without)
		}
		if h.Without == "" {
			t.Errorf("%s: say what breaks without it", h.Selector)
		}
	}
	// The reverse: a delegate method set in the darwin code is listed.
	delegateSetter := regexp.MustCompile(`^Set(WebView|Download)[A-Z]`)
	for c := range calls {
		if delegateSetter.MatchString(c) && !listed[c] {
			t.Errorf("the darwin code sets %s, which WebHooks does not list", c)
		}
	}
	// The protocol's required method is among them: WebKit raises without it.
	required := "download:decideDestinationUsingResponse:suggestedFilename:completionHandler:"
	if !slices.ContainsFunc(WebHooks, func(h WebHook) bool { return h.Selector == required }) {
		t.Errorf("WKDownloadDelegate's required %s is missing", required)
	}
	for _, must := range []string{"runJavaScriptConfirmPanel", "runJavaScriptAlertPanel", "runJavaScriptTextInputPanel", "runOpenPanel", "createWebViewWithConfiguration", "navigationAction:didBecomeDownload"} {
		if !slices.ContainsFunc(WebHooks, func(h WebHook) bool { return strings.Contains(h.Selector, must) }) {
			t.Errorf("no hook for %s", must)
		}
	}
}

// TestNavigation: the windows stay on the helper's own pages; web and mail
// links go to the default apps; download links download; file: and custom
// schemes (a page or an output trying to open a local file or an app) go
// nowhere.
func TestNavigation(t *testing.T) {
	home := "http://127.0.0.1:5482/login?token=x&next=%2Ftasks%2Fabc"
	for _, c := range []struct {
		target   string
		download bool
		want     NavAction
	}{
		{"http://127.0.0.1:5482/tasks/abc", false, NavAllow},
		{"HTTP://127.0.0.1:5482/settings", false, NavAllow},
		{"http://127.0.0.1:5482/api/v1/tasks/abc/files/x.pdf", true, NavDownload},
		{"blob:http://127.0.0.1:5482/5f1c", true, NavDownload},
		{"about:blank", false, NavAllow},
		{"http://127.0.0.1:5483/", false, NavExternal}, // another port is another origin
		{"http://localhost:5482/", false, NavExternal},
		{"https://platform.openai.com/api-keys", false, NavExternal},
		{"mailto:someone@example.com", false, NavExternal},
		{"file:///etc/passwd", false, NavCancel},
		{"x-apple.systempreferences:com.apple.preference.security", false, NavCancel},
		{"javascript:alert(1)", false, NavCancel},
		{"%zz", false, NavCancel},
	} {
		if got := Navigation(home, c.target, c.download); got != c.want {
			t.Errorf("Navigation(%q, download=%v) = %v, want %v", c.target, c.download, got, c.want)
		}
	}
	for _, c := range []struct {
		target string
		want   NavAction
	}{
		{"http://127.0.0.1:5482/api/v1/tasks/abc/screenshots/3.png", NavAllow}, // a screenshot opens in an app window (it needs the login)
		{"https://example.com/", NavExternal},
		{"about:blank", NavCancel},
		{"file:///Users/a/.ssh/id_ed25519", NavCancel},
	} {
		if got := NewWindow(home, c.target); got != c.want {
			t.Errorf("NewWindow(%q) = %v, want %v", c.target, got, c.want)
		}
	}
	// A window whose home is unknown treats nothing as the helper's.
	if got := Navigation("", "http://127.0.0.1:5482/", false); got != NavExternal {
		t.Errorf("unknown home: %v", got)
	}
}

// TestDownloads: a download's name comes from the server, and for a task's
// outputs from the guest: it cannot leave the Downloads folder, hide
// itself, or disguise its extension with a bidi override; an existing
// file is never overwritten (WebKit refuses an existing destination).
func TestDownloads(t *testing.T) {
	for in, want := range map[string]string{
		"summary.md":              "summary.md",
		"../../Library/x.plist":   "x.plist",
		`..\..\evil.txt`:          "evil.txt",
		".zshrc":                  "zshrc",
		"...":                     "download",
		"":                        "download",
		"report\u202efdp.exe":     "report_fdp.exe",
		"line\nbreak\x1b[31m.txt": "line_break_[31m.txt",
		"bad\xffutf8.txt":         "bad_utf8.txt",
		"  spaced  ":              "spaced",
		strings.Repeat("é", 200):  strings.Repeat("é", 127),
		"hivecrew-status.json":    "hivecrew-status.json",
		"Résumé – final (v2).pdf": "Résumé – final (v2).pdf",
	} {
		if got := DownloadName(in); got != want {
			t.Errorf("DownloadName(%q) = %q, want %q", in, got, want)
		}
	}
	dir := t.TempDir()
	taken := map[string]bool{filepath.Join(dir, "a.txt"): true, filepath.Join(dir, "a (1).txt"): true, filepath.Join(dir, "Makefile"): true}
	exists := func(p string) bool { return taken[p] }
	if got := DownloadPath(dir, "a.txt", exists); got != filepath.Join(dir, "a (2).txt") {
		t.Errorf("DownloadPath a.txt = %q", got)
	}
	if got := DownloadPath(dir, "Makefile", exists); got != filepath.Join(dir, "Makefile (1)") {
		t.Errorf("DownloadPath Makefile = %q", got)
	}
	if got := DownloadPath(dir, "../b.txt", exists); got != filepath.Join(dir, "b.txt") {
		t.Errorf("DownloadPath ../b.txt = %q", got)
	}
	for _, c := range []struct {
		canShow     bool
		disposition string
		want        bool
	}{
		{true, "", false},
		{false, "", true},
		{true, `attachment; filename="session.html"`, true},
		{true, `Attachment`, true},
		{true, `inline; filename="x.png"`, false},
	} {
		if got := DownloadResponse(c.canShow, c.disposition); got != c.want {
			t.Errorf("DownloadResponse(%v, %q) = %v", c.canShow, c.disposition, got)
		}
	}
	if p := OpenPanelFor(false, true); !p.Files || p.Directories || !p.Multiple {
		t.Errorf("open panel for <input type=file multiple>: %+v", p)
	}
	if p := OpenPanelFor(true, false); !p.Files || !p.Directories || p.Multiple {
		t.Errorf("open panel for a directory input: %+v", p)
	}
}

// TestWindowKind: a login link opens the window of its "next" page.
func TestWindowKind(t *testing.T) {
	for link, want := range map[string]string{
		"http://127.0.0.1:5482/login?token=x":                              "dashboard",
		"http://127.0.0.1:5482/login?token=x&next=%2F":                     "dashboard",
		"http://127.0.0.1:5482/login?token=x&next=%2Fsettings":             "settings",
		"http://127.0.0.1:5482/login?token=x&next=%2Fsettings%23providers": "settings",
		"http://127.0.0.1:5482/login?token=x&next=%2Ftasks%2Fabc":          "tasks/abc",
		"http://127.0.0.1:5482/login?token=x&next=%2Ftasks%2Fabc%2Freplay": "tasks/abc",
		"http://127.0.0.1:5482/login?token=x&next=%2Ftasks":                "tasks",
		"http://127.0.0.1:5482/login?token=x&next=/environments&y=1":       "environments",
	} {
		if got := WindowKind(link); got != want {
			t.Errorf("WindowKind(%q) = %q, want %q", link, got, want)
		}
	}
}

// TestMainMenu answers issue 16.4: the hidden main menu has the standard
// Edit and Window items with their key equivalents, sent to the first
// responder, and no key equivalent twice.
func TestMainMenu(t *testing.T) {
	menus := MainMenu()
	if len(menus) < 3 {
		t.Fatalf("menus: %+v", menus)
	}
	type chord struct {
		key   string
		shift bool
	}
	seen := map[chord]string{}
	byAction := map[string]MenuItem{}
	titles := []string{}
	for _, m := range menus {
		titles = append(titles, m.Title)
		for _, it := range m.Items {
			if it.Title == "" {
				if it.Action != "" || it.Key != "" {
					t.Errorf("separator with an action: %+v", it)
				}
				continue
			}
			if !regexp.MustCompile(`^[a-z][A-Za-z]*:$`).MatchString(it.Action) {
				t.Errorf("%s: %q is not a one-argument action selector", it.Title, it.Action)
			}
			c := chord{it.Key, it.Shift}
			if prev, dup := seen[c]; dup && it.Key != "" {
				t.Errorf("%s and %s share the key equivalent %+v", prev, it.Title, c)
			}
			seen[c] = it.Title
			byAction[it.Action] = it
		}
	}
	if !slices.Contains(titles, "Edit") || !slices.Contains(titles, "Window") {
		t.Errorf("menus %v lack Edit or Window", titles)
	}
	for action, want := range map[string]chord{
		"undo:": {"z", false}, "redo:": {"z", true}, "cut:": {"x", false}, "copy:": {"c", false},
		"paste:": {"v", false}, "selectAll:": {"a", false}, "performClose:": {"w", false},
	} {
		it, ok := byAction[action]
		if !ok {
			t.Errorf("no menu item sends %s", action)
			continue
		}
		if (chord{it.Key, it.Shift}) != want {
			t.Errorf("%s is on %+v, want %+v", action, chord{it.Key, it.Shift}, want)
		}
	}
}
