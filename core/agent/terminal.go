package agent

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// The terminal gate. A GUI agent that may not run shell commands could
// open a terminal, a shell or an interpreter and type them there, or open
// a script with a program that runs it: the open_terminal policy
// (core/config) gates the open_app and open_file calls that start one.
// It judges what runs, not what it is called: the guest resolves the
// call's name (resolve_app) to the desktop entry or bundle and the real
// path of the program it starts, and these rules judge that answer:
//
//   - runs code (open_terminal's permission): a terminal emulator, a
//     shell, an interpreter of any version (python3.11, perl5.36.0), a
//     launcher that runs what it is given (env, xdg-open, a file
//     manager), an editor or IDE that runs commands, an entry that runs
//     in a terminal (Terminal=true) or is filed as a terminal emulator or
//     IDE; for a file opened with its default application, also a file
//     that is a program (executable bits, a #! line, a script's or
//     package's suffix);
//   - a known app (the tool's own permission): a document viewer, text
//     editor or browser on the allowlist below;
//   - any other app: the tool's own permission, but "allow" asks unless
//     open_terminal is allowed too.
//
// It cannot close every route a GUI offers (a file manager's "open
// terminal here", a browser's developer tools, an office suite's macros,
// keys typed into whatever is in front); the settings page and
// docs/security.md ("What a permission means") say so.

// runsCodeNames are programs, desktop-file ids and macOS bundle ids that
// run what they are given or what is typed into them, compared in lower
// case. A program name also matches with a version suffix (python3.11,
// perl5.36.0, node18, tclsh8.6; see family).
var runsCodeNames = setOf(`
	xterm uxterm lxterm koi8rxterm x-terminal-emulator gnome-terminal gnome-terminal-server
	org.gnome.terminal org.gnome.console kgx konsole org.kde.konsole xfce4-terminal
	lxterminal mate-terminal terminator tilix com.gexperts.tilix alacritty kitty urxvt
	rxvt rxvt-unicode urxvtd st foot footclient wezterm wezterm-gui org.wezfurlong.wezterm qterminal
	terminology eterm sakura guake tilda yakuake cool-retro-term deepin-terminal xiterm
	terminal com.apple.terminal iterm iterm2 com.googlecode.iterm2 warp
	dev.warp.warp-stable hyper co.zeit.hyper ghostty com.mitchellh.ghostty tabby org.tabby
	net.kovidgoyal.kitty io.alacritty com.github.wez.wezterm
	sh bash dash zsh fish ksh mksh pdksh csh tcsh ash busybox toybox nu elvish xonsh pwsh powershell rbash yash
	python pythonw pypy ipython idle perl ruby irb node nodejs deno bun lua luajit php tclsh wish jimsh
	osascript script expect screen tmux gawk awk mawk nawk guile racket sbcl clisp julia r rscript gjs
	java jshell groovy kotlin scala dotnet swift ocaml ghci runghc erl escript iex elixir qjs tcc
	gdb lldb jupyter jupyter-notebook jupyter-lab spyder thonny
	com.apple.scripteditor2 com.apple.automator automator com.apple.shortcuts shortcuts
	com.apple.dt.xcode xcode
	vi vim vim.basic vim.tiny vim.gtk vim.gtk3 vim.nox nvim gvim emacs emacs-gtk code codium com.microsoft.vscode com.vscodium geany kate org.kde.kate
	idea pycharm eclipse
	su sudo doas pkexec runuser env nohup setsid timeout nice ionice chrt taskset stdbuf xargs
	dbus-launch dbus-run-session systemd-run startx xinit flatpak-spawn
	xdg-open gio exo-open kde-open kde-open5 kioclient kioclient5 gnome-open mimeopen run-mailcap see open
	pcmanfm pcmanfm-qt thunar nautilus org.gnome.nautilus dolphin org.kde.dolphin nemo caja spacefm
	com.apple.finder finder idle-python3`, "script editor")

// knownApps are the document viewers, text editors and browsers that
// open_app and open_file may start under their own permission: programs,
// desktop-file ids and bundle ids. None of them runs commands it is
// given or typed (an office suite runs macros, so LibreOffice and Word
// are not here: they ask).
var knownApps = setOf(`
	mousepad org.xfce.mousepad gedit org.gnome.gedit gnome-text-editor org.gnome.texteditor
	xed pluma leafpad l3afpad featherpad
	evince org.gnome.evince okular org.kde.okular atril xreader zathura mupdf qpdfview xpdf epdfview
	eog org.gnome.eog ristretto org.xfce.ristretto gpicview feh sxiv nsxiv imv gthumb
	display display-im6.q16 display-im7.q16
	firefox firefox-esr chromium chromium-browser google-chrome google-chrome-stable epiphany
	org.gnome.epiphany falkon
	mpv vlc totem org.gnome.totem celluloid parole
	gnome-calculator org.gnome.calculator galculator qalculate-gtk abiword
	com.apple.textedit textedit com.apple.preview preview com.apple.safari safari
	com.apple.quicktimeplayerx com.apple.photos com.apple.calculator com.apple.notes com.apple.ibooksx
	com.apple.iwork.pages com.apple.iwork.numbers com.apple.iwork.keynote
	com.google.chrome org.mozilla.firefox`)

// runsCodeCategories are desktop-entry categories of programs that run
// code.
var runsCodeCategories = []string{"TerminalEmulator", "IDE"}

// scriptSuffixes open as programs (or in a terminal, or in an installer)
// when a file is opened with its default application.
var scriptSuffixes = strings.Fields(`
	.sh .bash .zsh .ksh .csh .fish .command .tool .desktop .py .pyw .pyz .pl .pm .rb .js .mjs .cjs
	.php .lua .tcl .tk .exp .awk .ps1 .r .jl .swift .kts .groovy .jar .run .bin .appimage .exe .bat .cmd .vbs
	.scpt .scptd .applescript .app .workflow .action .terminal .pkg .mpkg .deb .rpm .flatpakref`)

// setOf is a set of the words, and of names with spaces given apart.
func setOf(words string, spaced ...string) map[string]bool {
	out := map[string]bool{}
	for _, w := range append(strings.Fields(words), spaced...) {
		out[w] = true
	}
	return out
}

// baseName is a name as the lists spell it: its last path element, in
// lower case, without .desktop or .app, without arguments ("bash -c id"),
// unless the whole is a listed name with a space ("Script Editor").
func baseName(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	n = path.Base(strings.TrimRight(n, "/"))
	n = strings.TrimSuffix(strings.TrimSuffix(n, ".desktop"), ".app")
	if runsCodeNames[n] || knownApps[n] {
		return n
	}
	if fields := strings.Fields(n); len(fields) > 0 {
		n = fields[0]
	}
	return n
}

// family returns the listed name a name spells, with any version suffix
// (python3.11, perl5.36.0, perl5.36-x86_64-linux-gnu, node18, ruby3.1,
// tclsh8.6), or "" when it spells none.
func family(set map[string]bool, name string) string {
	n := baseName(name)
	if set[n] {
		return n
	}
	digit := func(i int) bool { return i < len(n) && n[i] >= '0' && n[i] <= '9' }
	for i := len(n) - 1; i > 0; i-- {
		if set[n[:i]] && (digit(i) || (n[i] == '.' || n[i] == '-') && digit(i+1)) {
			return n[:i]
		}
	}
	return ""
}

// terminalName reports whether a name, as given, names a program that
// runs code: the check of guests that cannot resolve names.
func terminalName(name string) bool {
	return family(runsCodeNames, name) != "" || strings.Contains(strings.ToLower(name), "terminal")
}

// launchClass is how the gate sees what a call starts.
type launchClass int

const (
	knownApp launchClass = iota // the tool's own permission
	otherApp                    // the tool's own, but "allow" asks unless open_terminal allows
	runsCode                    // open_terminal's permission
	notFound                    // nothing would open: the call is refused as the guest would
)

// verdict is the gate's judgement of one call, with its reason in words.
type verdict struct {
	class launchClass
	why   string
}

// judgeOpen judges an open_app or open_file call by what the guest says
// it starts. given is the name the model gave (open_app's name,
// open_file's app), file open_file's path.
func judgeOpen(tool, given, file string, res protocol.ResolvedApp) verdict {
	what := describeResolved(res)
	if tool == protocol.MethodOpenFile && given == "" {
		if v, ok := programFile(file, res.Target); ok {
			return v
		}
		if !res.Found {
			if res.MIME == "" {
				return verdict{otherApp, "no default application is known for it"}
			}
			return verdict{otherApp, fmt.Sprintf("no default application for %s: the guest falls back to another opener", res.MIME)}
		}
		what = "its default application, " + what
	}
	if !res.Found {
		return verdict{notFound, ""}
	}
	if why := runsCodeReason(given, res); why != "" {
		return verdict{runsCode, fmt.Sprintf("%s: %s", why, what)}
	}
	// The program decides; a bundle's id is its own (its executable's
	// name is its Info.plist's).
	if family(knownApps, res.Executable) != "" || res.Kind == "bundle" && family(knownApps, res.ID) != "" {
		return verdict{knownApp, what}
	}
	return verdict{otherApp, "an app Hivecrew does not know as a document viewer: " + what}
}

// programFile says whether open_file's file is itself a program.
func programFile(file string, facts *protocol.FileFacts) (verdict, bool) {
	switch {
	case facts != nil && facts.Executable:
		return verdict{runsCode, "an executable file"}, true
	case facts != nil && facts.Shebang != "":
		return verdict{runsCode, fmt.Sprintf("a script (%s)", truncate(facts.Shebang, 80))}, true
	}
	lower := strings.ToLower(strings.TrimRight(strings.TrimSpace(file), "/"))
	for _, suf := range scriptSuffixes {
		if strings.HasSuffix(lower, suf) {
			return verdict{runsCode, fmt.Sprintf("a program or script by its name (%s)", suf)}, true
		}
	}
	return verdict{}, false
}

// runsCodeReason says why what res starts runs code, or "".
func runsCodeReason(given string, res protocol.ResolvedApp) string {
	names := []string{res.Executable, res.ID, res.Name, res.File, given}
	for _, a := range res.Args {
		if !strings.HasPrefix(a, "-") {
			names = append(names, a)
		}
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if f := family(runsCodeNames, n); f != "" {
			return fmt.Sprintf("runs code (%s)", f)
		}
		if strings.Contains(strings.ToLower(n), "terminal") {
			return "a terminal"
		}
	}
	if res.Terminal {
		return "runs in a terminal"
	}
	for _, c := range res.Categories {
		if slices.Contains(runsCodeCategories, c) {
			return "an app filed as " + c
		}
	}
	return ""
}

// describeResolved says what runs, in words: "desktop entry debian-xterm
// runs /usr/bin/xterm".
func describeResolved(res protocol.ResolvedApp) string {
	switch {
	case !res.Found:
		return "nothing"
	case res.Kind == "desktop-entry":
		return fmt.Sprintf("desktop entry %s runs %s", truncate(res.ID, 100), truncate(res.Executable, 200))
	case res.Kind == "bundle":
		return fmt.Sprintf("%s (%s) runs %s", truncate(res.Name, 100), truncate(res.ID, 100), truncate(res.Executable, 200))
	}
	return "runs " + truncate(res.Executable, 200)
}

// opensTerminal reports whether a call names a terminal, a shell, an
// interpreter or a script, by its names alone: the check for guests that
// cannot say what a name runs (no resolve_app).
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
		if _, ok := programFile(str("path"), nil); ok {
			return str("path"), true
		}
	}
	return "", false
}
