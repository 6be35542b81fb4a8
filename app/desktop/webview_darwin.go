package desktop

// The web windows: an NSWindow holding a WKWebView, with the UI,
// navigation and download delegates of WebHooks (webview.go). Everything
// here runs on the main thread: Open dispatches to it, and WebKit and
// AppKit call the delegates there. Windows are retained and released
// explicitly on the main thread (not through darwinkit's objc.Retain,
// whose release runs on the garbage collector's finalizer goroutine).

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/macos/webkit"
	"github.com/progrium/darwinkit/objc"
)

// window is an open page window and its web view.
type window struct {
	kind string
	home string // the link it was opened with: its origin is the helper's
	w    appkit.Window
	view webkit.WebView
}

// Main-thread state: the open windows by kind, and a counter naming the
// windows that pages open (target=_blank).
var (
	windows = map[string]*window{}
	popups  int
)

// Open shows a page of the web UI in a native window (a WKWebView) on the
// main thread; the window's frame is remembered per kind of page.
func Open(link string) error {
	dispatch.MainQueue().DispatchAsync(func() {
		kind := WindowKind(link)
		win, ok := windows[kind]
		if !ok {
			view := webkit.NewWebViewWithFrameConfiguration(foundation.Rect{}, webkit.NewWebViewConfiguration())
			win = newWindow(kind, link, view)
		}
		webkit.LoadURL(win.view, link)
		win.w.MakeKeyAndOrderFront(nil)
		activate()
		yieldToHelper()
	})
	return nil
}

// yieldToHelper lets the helper (com.hivecrew.helper) make itself active
// later: since macOS 14 an app activates only when the active app yields
// to it, and the helper's takeover window is asked for from these web
// windows (NSApplication yieldActivationToApplicationWithBundleIdentifier:;
// darwinkit v0.5.0 does not bind it).
func yieldToHelper() {
	objc.Call[objc.Void](appkit.Application_SharedApplication(), objc.Sel("yieldActivationToApplicationWithBundleIdentifier:"), HelperBundleID)
}

// newWindow puts view in a new window of kind, wires its delegates and
// keeps it until it closes. Main thread only.
func newWindow(kind, home string, view webkit.WebView) *window {
	w := appkit.NewWindowWithSize(1100, 760)
	w.Retain()
	view.Retain()
	w.SetTitle("Hivecrew")
	w.SetFrameAutosaveName(appkit.WindowFrameAutosaveName("Hivecrew " + kind))
	w.SetReleasedWhenClosed(false)
	// The web UI offers the VM's native window for takeover when it sees
	// it runs inside the app.
	view.SetCustomUserAgent("HivecrewApp/1 (Macintosh) AppleWebKit")
	view.SetUIDelegate(uiDelegate())
	view.SetNavigationDelegate(navigationDelegate())
	w.SetContentView(view)
	win := &window{kind: kind, home: home, w: w, view: view}
	wd := &appkit.WindowDelegate{}
	// Each time a web window is in front, the helper may take the front
	// for a takeover.
	wd.SetWindowDidBecomeKey(func(foundation.Notification) { yieldToHelper() })
	wd.SetWindowWillClose(func(foundation.Notification) {
		delete(windows, kind)
		// Released after AppKit has finished closing it: a closed task
		// window does not stay in memory for the life of the app.
		dispatch.MainQueue().DispatchAsync(func() {
			view.StopLoading()
			view.Release()
			w.Release()
		})
	})
	w.SetDelegate(wd)
	windows[kind] = win
	return win
}

// homeOf is the link the window of view was opened with ("" if unknown).
func homeOf(view webkit.WebView) string {
	for _, win := range windows {
		if win.view.Ptr() == view.Ptr() {
			return win.home
		}
	}
	return ""
}

// activate brings the app forward after a click in its own menu:
// NSApplication.activate (macOS 14 and later; darwinkit v0.5.0 does not
// bind it). activateIgnoringOtherApps: does nothing since macOS 14.
func activate() {
	objc.Call[objc.Void](appkit.Application_SharedApplication(), objc.Sel("activate"))
}

// openExternally opens a web or mail link in the user's default app.
func openExternally(target string) {
	u := foundation.URL_URLWithString(target)
	if u.IsNil() { // URLWithString: returns nil for a malformed URL
		return
	}
	appkit.Workspace_SharedWorkspace().OpenURL(u)
}

// runAlert shows alert as a sheet on view's window (as a modal panel when
// the view has no window) and passes the button pressed to done.
func runAlert(alert appkit.Alert, view webkit.WebView, done func(appkit.ModalResponse)) {
	alert.Retain() // the sheet does not keep the alert alive
	finish := func(r appkit.ModalResponse) {
		done(r)
		alert.Release()
	}
	if win := view.Window(); !win.IsNil() {
		alert.BeginSheetModalForWindowCompletionHandler(win, finish)
		return
	}
	finish(alert.RunModal())
}

// uiDelegate answers alert(), confirm() and prompt() with sheets, opens
// the file chooser for <input type=file>, and opens target=_blank links.
// WebKit requires every completion handler to be called exactly once.
func uiDelegate() *webkit.UIDelegate {
	d := &webkit.UIDelegate{}
	d.SetWebViewRunJavaScriptAlertPanelWithMessageInitiatedByFrameCompletionHandler(func(view webkit.WebView, message string, _ webkit.FrameInfo, done func()) {
		alert := appkit.NewAlert()
		alert.SetMessageText(message)
		alert.AddButtonWithTitle("OK")
		runAlert(alert, view, func(appkit.ModalResponse) { done() })
	})
	d.SetWebViewRunJavaScriptConfirmPanelWithMessageInitiatedByFrameCompletionHandler(func(view webkit.WebView, message string, _ webkit.FrameInfo, done func(bool)) {
		alert := appkit.NewAlert()
		alert.SetMessageText(message)
		alert.AddButtonWithTitle("OK")
		alert.AddButtonWithTitle("Cancel")
		runAlert(alert, view, func(r appkit.ModalResponse) { done(r == appkit.AlertFirstButtonReturn) })
	})
	d.SetWebViewRunJavaScriptTextInputPanelWithPromptDefaultTextInitiatedByFrameCompletionHandler(func(view webkit.WebView, prompt, defaultText string, _ webkit.FrameInfo, done func(string)) {
		alert := appkit.NewAlert()
		alert.SetMessageText(prompt)
		alert.AddButtonWithTitle("OK")
		alert.AddButtonWithTitle("Cancel")
		field := appkit.NewTextFieldWithFrame(foundation.Rect{Size: foundation.Size{Width: 300, Height: 24}})
		field.SetStringValue(defaultText)
		alert.SetAccessoryView(field)
		runAlert(alert, view, func(r appkit.ModalResponse) {
			// darwinkit's handler takes a string, so Cancel answers ""
			// where Safari answers null (the web UI does not use prompt).
			if r == appkit.AlertFirstButtonReturn {
				done(field.StringValue())
			} else {
				done("")
			}
		})
	})
	d.SetWebViewRunOpenPanelWithParametersInitiatedByFrameCompletionHandler(func(view webkit.WebView, params webkit.OpenPanelParameters, _ webkit.FrameInfo, done func([]foundation.URL)) {
		p := OpenPanelFor(params.AllowsDirectories(), params.AllowsMultipleSelection())
		panel := appkit.OpenPanel_OpenPanel()
		panel.SetCanChooseFiles(p.Files)
		panel.SetCanChooseDirectories(p.Directories)
		panel.SetAllowsMultipleSelection(p.Multiple)
		finish := func(r appkit.ModalResponse) {
			if r == appkit.ModalResponseOK {
				done(panel.URLs())
			} else {
				done(nil) // nil: the user cancelled
			}
		}
		if win := view.Window(); !win.IsNil() {
			panel.BeginSheetModalForWindowCompletionHandler(win, finish)
		} else {
			finish(panel.RunModal())
		}
	})
	d.SetWebViewCreateWebViewWithConfigurationForNavigationActionWindowFeatures(func(view webkit.WebView, cfg webkit.WebViewConfiguration, action webkit.NavigationAction, _ webkit.WindowFeatures) webkit.WebView {
		home := homeOf(view)
		target := action.Request().URL().AbsoluteString()
		switch NewWindow(home, target) {
		case NavAllow:
			// A new window with the configuration WebKit gives (it must
			// be used as is), which loads the link itself.
			popups++
			popup := webkit.NewWebViewWithFrameConfiguration(foundation.Rect{}, cfg)
			win := newWindow(fmt.Sprintf("page-%d", popups), home, popup)
			win.w.MakeKeyAndOrderFront(nil)
			return popup
		case NavExternal:
			openExternally(target)
		}
		return webkit.WebView{} // nil: no window
	})
	return d
}

// navigationDelegate keeps the windows on the helper's pages (other links
// go to the default browser), turns download links and responses the view
// cannot show into downloads, and reloads a page whose web process died.
func navigationDelegate() *webkit.NavigationDelegate {
	d := &webkit.NavigationDelegate{}
	d.SetWebViewDecidePolicyForNavigationActionDecisionHandler(func(view webkit.WebView, action webkit.NavigationAction, decide func(webkit.NavigationActionPolicy)) {
		target := action.Request().URL().AbsoluteString()
		switch Navigation(homeOf(view), target, action.ShouldPerformDownload()) {
		case NavAllow:
			decide(webkit.NavigationActionPolicyAllow)
		case NavDownload:
			decide(webkit.NavigationActionPolicyDownload)
		case NavExternal:
			openExternally(target)
			decide(webkit.NavigationActionPolicyCancel)
		default:
			decide(webkit.NavigationActionPolicyCancel)
		}
	})
	d.SetWebViewDecidePolicyForNavigationResponseDecisionHandler(func(view webkit.WebView, resp webkit.NavigationResponse, decide func(webkit.NavigationResponsePolicy)) {
		disposition := ""
		if r := resp.Response(); r.IsKindOfClass(foundation.HTTPURLResponseClass.Class) {
			disposition = foundation.HTTPURLResponseFrom(r.Ptr()).ValueForHTTPHeaderField("Content-Disposition")
		}
		if DownloadResponse(resp.CanShowMIMEType(), disposition) {
			decide(webkit.NavigationResponsePolicyDownload)
		} else {
			decide(webkit.NavigationResponsePolicyAllow)
		}
	})
	d.SetWebViewNavigationActionDidBecomeDownload(func(_ webkit.WebView, _ webkit.NavigationAction, download webkit.Download) {
		download.SetDelegate(downloadDelegate())
	})
	d.SetWebViewNavigationResponseDidBecomeDownload(func(_ webkit.WebView, _ webkit.NavigationResponse, download webkit.Download) {
		download.SetDelegate(downloadDelegate())
	})
	d.SetWebViewWebContentProcessDidTerminate(func(view webkit.WebView) { view.Reload() })
	return d
}

// downloadDelegate saves a download in ~/Downloads under a safe, unused
// name and shows it in the Finder when it is done.
func downloadDelegate() *webkit.DownloadDelegate {
	var dest string
	d := &webkit.DownloadDelegate{}
	d.SetDownloadDecideDestinationUsingResponseSuggestedFilenameCompletionHandler(func(_ webkit.Download, _ foundation.URLResponse, suggested string, done func(foundation.URL)) {
		home, _ := os.UserHomeDir()
		dest = DownloadPath(filepath.Join(home, "Downloads"), suggested, func(p string) bool {
			_, err := os.Lstat(p)
			return err == nil
		})
		done(foundation.URL_FileURLWithPath(dest))
	})
	d.SetDownloadDidFinish(func(webkit.Download) {
		if dest != "" {
			appkit.Workspace_SharedWorkspace().ActivateFileViewerSelectingURLs([]foundation.IURL{foundation.URL_FileURLWithPath(dest)})
		}
	})
	d.SetDownloadDidFailWithErrorResumeData(func(_ webkit.Download, err foundation.Error, _ []byte) {
		alert := appkit.NewAlert()
		alert.SetMessageText("The download failed")
		alert.SetInformativeText(err.LocalizedDescription())
		alert.AddButtonWithTitle("OK")
		alert.RunModal()
	})
	return d
}
