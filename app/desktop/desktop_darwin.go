package desktop

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/macos/webkit"
	"github.com/progrium/darwinkit/objc"

	"github.com/hivecrew/hivecrew/core/config"
)

// windows keeps the open windows, one per page kind, so that opening a
// page again brings its window forward; mu guards it.
var (
	mu      sync.Mutex
	windows = map[string]*window{}
)

// window is an open page window and its web view.
type window struct {
	w    appkit.Window
	view webkit.WebView
}

// kindOf names the window a link opens: its "next" path's first element
// ("tasks", "settings", or "dashboard").
func kindOf(link string) string {
	_, next, _ := strings.Cut(link, "next=")
	next = strings.TrimPrefix(strings.ReplaceAll(next, "%2F", "/"), "/")
	kind, _, _ := strings.Cut(next, "/")
	kind, _, _ = strings.Cut(kind, "#")
	if kind == "" {
		return "dashboard"
	}
	if kind == "tasks" {
		return next // one window per task
	}
	return kind
}

// Open shows a page of the web UI in a native window (a WKWebView) on the
// main thread; the window's frame is remembered per kind of page.
func Open(link string) error {
	dispatch.MainQueue().DispatchAsync(func() {
		kind := kindOf(link)
		mu.Lock()
		win, ok := windows[kind]
		mu.Unlock()
		if !ok {
			w := appkit.NewWindowWithSize(1100, 760)
			objc.Retain(&w)
			w.SetTitle("Hivecrew")
			w.SetFrameAutosaveName(appkit.WindowFrameAutosaveName("Hivecrew " + kind))
			w.SetReleasedWhenClosed(false)
			view := webkit.NewWebViewWithFrameConfiguration(foundation.Rect{}, webkit.NewWebViewConfiguration())
			objc.Retain(&view)
			// The web UI offers the VM's native window for takeover when it
			// sees it runs inside the app.
			view.SetCustomUserAgent("HivecrewApp/1 (Macintosh) AppleWebKit")
			w.SetContentView(view)
			win = &window{w: w, view: view}
			mu.Lock()
			windows[kind] = win
			mu.Unlock()
		}
		webkit.LoadURL(win.view, link)
		win.w.MakeKeyAndOrderFront(nil)
		appkit.Application_SharedApplication().ActivateIgnoringOtherApps(true)
	})
	return nil
}

// Notify delivers a user notification.
func Notify(title, body string) error {
	dispatch.MainQueue().DispatchAsync(func() {
		objc.WithAutoreleasePool(func() {
			n := objc.Call[objc.Object](objc.GetClass("NSUserNotification"), objc.Sel("new"))
			n.Autorelease()
			objc.Call[objc.Void](n, objc.Sel("setTitle:"), title)
			objc.Call[objc.Void](n, objc.Sel("setInformativeText:"), body)
			center := objc.Call[objc.Object](objc.GetClass("NSUserNotificationCenter"), objc.Sel("defaultUserNotificationCenter"))
			objc.Call[objc.Void](center, objc.Sel("deliverNotification:"), n)
		})
	})
	return nil
}

// SessionBusProblem: macOS always has a menu bar.
func SessionBusProblem() string { return "" }

func launchAgentPath(label string) string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, "Library", "LaunchAgents", label+".plist")
}

func domain() string { return "gui/" + strconv.Itoa(os.Getuid()) }

// Autostart is the app's LaunchAgent that starts the menu-bar app at login.
type Autostart struct{ App string }

// Enabled reports whether the agent is installed.
func (a Autostart) Enabled() bool {
	_, err := os.Stat(launchAgentPath(AppLabel))
	return err == nil
}

// Set installs or removes the agent (it takes effect at the next login).
func (a Autostart) Set(on bool) error {
	path := launchAgentPath(AppLabel)
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(LaunchAgentPlist(AppLabel, []string{a.App}, false, "")), 0o644)
}

// StartHelperService installs the helper's LaunchAgent (in the user's GUI
// session, so that it can show VM windows) and bootstraps it, replacing a
// previous registration. The agent names the guest agent the app found
// (Hivecrew.app/Contents/Resources, or next to the app in bin/).
func StartHelperService(helper string) (bool, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return false, err
	}
	logPath := filepath.Join(home, "Library", "Logs", "Hivecrew", "helper.log")
	os.MkdirAll(filepath.Dir(logPath), 0o755)
	path := launchAgentPath(HelperLabel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	var agent string
	if in, err := config.CurrentInstall(); err == nil {
		agent, _ = config.FirstExecutable(in.GuestAgentCandidates())
	}
	plist := LaunchAgentPlist(HelperLabel, HelperServiceArgs(helper, agent), true, logPath)
	if err := os.WriteFile(path, []byte(plist), 0o644); err != nil {
		return false, err
	}
	run := func(args ...string) ([]byte, error) { return exec.Command("launchctl", args...).CombinedOutput() }
	if err := replaceLaunchAgent(run, domain(), HelperLabel, path, 10*time.Second, time.Sleep); err != nil {
		return false, err
	}
	return true, nil
}
