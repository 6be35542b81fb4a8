package desktop

import (
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/files"
)

// The macOS web windows are WKWebViews. A WKWebView without a UI delegate
// answers confirm() with Cancel, shows no alert() or prompt(), opens no
// file chooser for <input type=file> and drops target=_blank links; one
// without a navigation delegate cannot download (WKUIDelegate.h,
// WKNavigationDelegate.h). The tables and decisions below are what
// desktop_darwin.go wires up; they are portable so that a test on any OS
// checks them (and that every hook is set in the darwin file, against the
// pinned darwinkit's setters).

// WebHook is one WebKit delegate method the web windows implement.
type WebHook struct {
	// Protocol is the Objective-C protocol: WKUIDelegate,
	// WKNavigationDelegate or WKDownloadDelegate.
	Protocol string
	// Selector is the method's Objective-C selector.
	Selector string
	// Without is what goes wrong when the method is missing.
	Without string
}

// WebHooks lists every delegate method the web windows implement.
var WebHooks = []WebHook{
	{"WKUIDelegate", "webView:runJavaScriptAlertPanelWithMessage:initiatedByFrame:completionHandler:",
		"alert() shows nothing"},
	{"WKUIDelegate", "webView:runJavaScriptConfirmPanelWithMessage:initiatedByFrame:completionHandler:",
		"confirm() answers Cancel: cancel or delete a task, stop or delete a VM, remove a provider and revoke a key do nothing"},
	{"WKUIDelegate", "webView:runJavaScriptTextInputPanelWithPrompt:defaultText:initiatedByFrame:completionHandler:",
		"prompt() answers null"},
	{"WKUIDelegate", "webView:runOpenPanelWithParameters:initiatedByFrame:completionHandler:",
		"<input type=file> opens nothing: no files can be attached to a task"},
	{"WKUIDelegate", "webView:createWebViewWithConfiguration:forNavigationAction:windowFeatures:",
		"target=_blank links (a task's screenshot) are dropped"},
	{"WKNavigationDelegate", "webView:decidePolicyForNavigationAction:decisionHandler:",
		"download links navigate instead of downloading; other sites load inside the app"},
	{"WKNavigationDelegate", "webView:decidePolicyForNavigationResponse:decisionHandler:",
		"a response the view cannot show (an exported session) is dropped"},
	{"WKNavigationDelegate", "webView:navigationAction:didBecomeDownload:",
		"a download link's download has no delegate and fails"},
	{"WKNavigationDelegate", "webView:navigationResponse:didBecomeDownload:",
		"a download response's download has no delegate and fails"},
	{"WKNavigationDelegate", "webViewWebContentProcessDidTerminate:",
		"a page whose web process died stays blank"},
	{"WKDownloadDelegate", "download:decideDestinationUsingResponse:suggestedFilename:completionHandler:",
		"required by the protocol: a download has nowhere to go"},
	{"WKDownloadDelegate", "downloadDidFinish:",
		"the user is not shown the downloaded file"},
	{"WKDownloadDelegate", "download:didFailWithError:resumeData:",
		"a failed download says nothing"},
}

// NavAction is what a web window does with a navigation.
type NavAction int

const (
	// NavAllow loads it in the window.
	NavAllow NavAction = iota
	// NavDownload downloads it (WKNavigationActionPolicyDownload).
	NavDownload
	// NavExternal opens it in the default browser or mail app, and
	// cancels it in the window.
	NavExternal
	// NavCancel drops it.
	NavCancel
)

func (a NavAction) String() string {
	return [...]string{"allow", "download", "external", "cancel"}[a]
}

// Navigation decides what a web window opened on the helper at home does
// with a navigation to target: a download link downloads; the helper's own
// pages (and about:blank, blob: and data: documents the page made) load in
// the app; web and mail links go to the default browser or mail app, since
// the app is not a browser; anything else (file:, custom schemes) is
// dropped.
func Navigation(home, target string, shouldDownload bool) NavAction {
	if shouldDownload {
		return NavDownload
	}
	t, err := url.Parse(target)
	if err != nil {
		return NavCancel
	}
	switch strings.ToLower(t.Scheme) {
	case "about", "blob", "data":
		return NavAllow
	case "mailto":
		return NavExternal
	case "http", "https":
		if sameOrigin(home, t) {
			return NavAllow
		}
		return NavExternal
	}
	return NavCancel
}

// NewWindow decides what a window.open or target=_blank link to target
// does: the helper's own pages open in a new app window (which shares the
// app's login), other web pages in the default browser; nothing else opens.
func NewWindow(home, target string) NavAction {
	t, err := url.Parse(target)
	if err != nil {
		return NavCancel
	}
	switch strings.ToLower(t.Scheme) {
	case "http", "https":
		if sameOrigin(home, t) {
			return NavAllow
		}
		return NavExternal
	case "mailto":
		return NavExternal
	}
	return NavCancel
}

// sameOrigin reports whether t has home's scheme, host and port.
func sameOrigin(home string, t *url.URL) bool {
	h, err := url.Parse(home)
	if err != nil || h.Host == "" {
		return false
	}
	return strings.EqualFold(h.Scheme, t.Scheme) && strings.EqualFold(h.Host, t.Host)
}

// DownloadResponse reports whether a response the window was about to show
// is downloaded instead: one the view cannot show, or one the server marks
// as an attachment (Content-Disposition: attachment; an exported session).
func DownloadResponse(canShow bool, contentDisposition string) bool {
	kind, _, _ := strings.Cut(contentDisposition, ";")
	return !canShow || strings.EqualFold(strings.TrimSpace(kind), "attachment")
}

// DownloadName turns a suggested file name (from the page or a
// Content-Disposition header: a task's output, which the guest named) into
// a safe name in the Downloads folder: one path element, not hidden, with
// no control, invisible-formatting or invalid characters, at most 255
// bytes; "download" when nothing is left.
func DownloadName(suggested string) string {
	name := suggested
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1, r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0, unicode.Is(unicode.Cf, r):
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	name = strings.TrimLeft(strings.TrimSpace(b.String()), ".")
	for len(name) > 255 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" || files.CheckOutputName(name) != nil {
		return "download"
	}
	return name
}

// DownloadPath is where a download suggested as name goes in dir: the safe
// name, or with " (n)" added before its extension when that is taken
// (WebKit refuses a destination that exists).
func DownloadPath(dir, suggested string, exists func(string) bool) string {
	name := DownloadName(suggested)
	ext := filepath.Ext(name)
	if ext == name {
		ext = ""
	}
	base := strings.TrimSuffix(name, ext)
	p := filepath.Join(dir, name)
	for n := 1; exists(p) && n < 10000; n++ {
		p = filepath.Join(dir, base+" ("+strconv.Itoa(n)+")"+ext)
	}
	return p
}

// OpenPanel is how the file chooser of an <input type=file> is set up.
type OpenPanel struct {
	Files, Directories, Multiple bool
}

// OpenPanelFor maps WKOpenPanelParameters to the panel: files can always
// be chosen; folders and several items when the input allows them.
func OpenPanelFor(allowsDirectories, allowsMultiple bool) OpenPanel {
	return OpenPanel{Files: true, Directories: allowsDirectories, Multiple: allowsMultiple}
}

// WindowKind names the window a login link opens, from its "next" path:
// "dashboard", "settings", ... or "tasks/<id>" (one window per task).
// Opening a link of a kind already open reuses that window.
func WindowKind(link string) string {
	_, next, _ := strings.Cut(link, "next=")
	if n, err := url.QueryUnescape(next); err == nil {
		next = n
	}
	next, _, _ = strings.Cut(next, "&")
	next, _, _ = strings.Cut(next, "#")
	next = strings.TrimPrefix(next, "/")
	kind, rest, _ := strings.Cut(next, "/")
	switch {
	case kind == "":
		return "dashboard"
	case kind == "tasks" && rest != "":
		id, _, _ := strings.Cut(rest, "/")
		return "tasks/" + id
	}
	return kind
}
