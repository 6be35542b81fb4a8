package agent

import (
	"path"
	"strings"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Terminal gating. A GUI agent that may not run shell commands could open
// a terminal and type them: the open_terminal policy (core/config) gates
// the calls that open a terminal, a shell or an interpreter by name. It
// cannot close every route a GUI offers (a file manager's "open terminal
// here", an IDE's console, a browser's developer tools); the settings page
// and the README say so.

// terminalNames are terminal emulators, shells and interpreters, by the
// names open_app and open_file accept: program names, desktop-file ids and
// macOS app names and bundle ids, compared case-insensitively.
var terminalNames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`
		xterm uxterm lxterm koi8rxterm x-terminal-emulator gnome-terminal gnome-terminal-server
		org.gnome.terminal org.gnome.console kgx konsole org.kde.konsole xfce4-terminal
		lxterminal mate-terminal terminator tilix com.gexperts.tilix alacritty kitty urxvt
		rxvt rxvt-unicode st foot footclient wezterm org.wezfurlong.wezterm qterminal
		terminology eterm sakura guake tilda yakuake cool-retro-term deepin-terminal
		terminal com.apple.terminal iterm iterm2 com.googlecode.iterm2 warp
		dev.warp.warp-stable hyper co.zeit.hyper ghostty com.mitchellh.ghostty tabby
		sh bash dash zsh fish ksh mksh csh tcsh ash busybox nu elvish xonsh pwsh powershell
		python python2 python3 ipython perl ruby irb node nodejs lua php tclsh wish osascript
		script expect screen tmux su sudo doas pkexec env`) {
		terminalNames[n] = true
	}
}

// scriptSuffixes open as programs (or in a terminal) when opened as files.
var scriptSuffixes = []string{".sh", ".bash", ".zsh", ".command", ".tool", ".desktop", ".py", ".pl", ".rb", ".js", ".run", ".bin", ".appimage"}

// terminalName reports whether an app name names a terminal, a shell or
// an interpreter: its base name, without .desktop or .app, is a known one
// or contains "terminal".
func terminalName(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimRight(n, "/")
	n = path.Base(n)
	n = strings.TrimSuffix(strings.TrimSuffix(n, ".desktop"), ".app")
	if fields := strings.Fields(n); len(fields) > 0 {
		n = fields[0] // "bash -c ..." or "Terminal Preview"
	}
	return terminalNames[n] || strings.Contains(strings.ToLower(name), "terminal")
}

// opensTerminal reports whether a call opens a terminal, a shell or an
// interpreter, and what it opens.
func opensTerminal(tool string, args map[string]any) (string, bool) {
	str := func(k string) string { s, _ := args[k].(string); return s }
	switch tool {
	case protocol.MethodOpenApp:
		if n := str("name"); terminalName(n) {
			return n, true
		}
	case protocol.MethodOpenFile:
		if a := str("app"); a != "" && terminalName(a) {
			return a, true
		}
		p := strings.ToLower(strings.TrimSpace(str("path")))
		for _, suf := range scriptSuffixes {
			if strings.HasSuffix(p, suf) {
				return str("path"), true
			}
		}
	}
	return "", false
}
