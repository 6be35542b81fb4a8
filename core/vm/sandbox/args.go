package sandbox

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hivecrew/hivecrew/core/vm"
)

// Paths inside every sandbox.
const (
	guestShared  = "/mnt/shared"
	guestHome    = "/home/user"
	guestRun     = "/run/hivecrew"
	guestAgent   = "/run/hivecrew-bin/hivecrew-guestagent"
	guestSocket  = guestRun + "/agent.sock"
	guestUID     = 1000
	guestRuntime = "/run/user/1000"
)

// File descriptors handed to bwrap (ExtraFiles start at 3).
const (
	fdInfo = 3 + iota
	fdPasswd
	fdGroup
	fdResolv // internet only
	fdMachineID
	fdHosts
	fdKey  // the boot key, read and closed by the guest agent
	fdArgs // bubblewrap's own arguments (--args), kept off the command line
)

// maskedDirs hold host user data; each gets an empty tmpfs in the sandbox.
var maskedDirs = []string{"/tmp", "/var/tmp", "/run", "/home", "/root", "/mnt", "/media"}

// launch is what bwrapArgs needs to know about one start.
type launch struct {
	ID      string
	Kind    vm.TemplateKind
	Network vm.NetworkMode
	// Home, Shared, Run, Agent and Root (rootfs only) are the host paths to bind.
	Home, Shared, Run, Agent, Root string
	// Mask lists further host paths to hide (the data directory).
	Mask []string
	// RootEntries are the host's top-level entries (host template): each
	// is bound read-only on its own, never "/" as a whole (see hostRoot).
	RootEntries                 []RootEntry
	DisplayWidth, DisplayHeight int
	LogLevel                    string
	// CPUs is the machine's CPU count, which the guest agent sizes its
	// runtime to (as it would in a VM of that many CPUs).
	CPUs int
}

// RootEntry is a top-level entry of the host's root: a folder (or file)
// to bind, or a symbolic link (Link, its target) to recreate.
type RootEntry struct {
	Name, Link string
}

// boundRoot is the allowlist of top-level entries a host-template sandbox
// binds (read-only): the programs and libraries, and on merged-/usr
// systems the /bin, /lib* and /sbin links into /usr, recreated as links.
// Everything else of the host's root (/work, /srv, /opt, /var, /boot, the
// rest of /etc ...) is absent in the sandbox, not masked. /etc is built
// from etcAllow, /var is an empty tmpfs (see bwrapArgs).
var boundRoot = map[string]bool{"usr": true, "bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true, "libx32": true}

// etcAllow are the entries of the host's /etc a host-template sandbox
// binds read-only: what the dynamic linker, name service, fonts, TLS, the
// X11/D-Bus/GTK desktop and shells read, and Chromium's (its launcher
// sources chromium.d and fails without it). Not in it, so absent: shadow,
// gshadow, ssh (host keys), machine-id (each VM gets its own), hosts and
// hostname (generated), resolv.conf (only internet mode gets one, pointing
// at slirp4netns), subuid/subgid, sudoers, cron, pam, credentials of
// installed services (postgresql, apache2, ...).
var etcAllow = []string{
	"alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "chromium", "chromium.d", "dbus-1", "dconf",
	"debian_version", "environment", "fonts", "gai.conf", "glvnd", "gtk-2.0", "gtk-3.0", "host.conf",
	"inputrc", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "locale.alias", "localtime", "magic",
	"magic.mime", "mime.types", "networks", "nsswitch.conf", "os-release", "profile", "profile.d",
	"protocols", "python3", "python3.11", "perl", "services", "shells", "ssl", "terminfo", "timezone",
	"X11", "xdg", "xml", "sgml", "vim", "ImageMagick-6", "java-17-openjdk", "libpaper.d", "papersize",
	"libreoffice", // its registry: soffice --headless (read_file's Office documents) fails without it
}

// hostsFile is the sandbox's /etc/hosts: its own names only.
const hostsFile = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"

// covered reports whether path lies inside one of the masked folders.
func covered(path string) bool {
	for _, m := range maskedDirs {
		if path == m || strings.HasPrefix(path, m+"/") {
			return true
		}
	}
	return false
}

// bwrapArgs returns bubblewrap's arguments for a launch.
func bwrapArgs(l launch) []string {
	fd := func(n int) string { return strconv.Itoa(n) }
	a := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--uid", fd(guestUID), "--gid", fd(guestUID),
		"--hostname", "hivecrew-" + shortID(l.ID),
	}
	if l.Kind == vm.KindRootFS {
		a = append(a, "--bind", l.Root, "/")
	} else {
		for _, e := range l.RootEntries {
			if e.Link != "" {
				a = append(a, "--symlink", e.Link, "/"+e.Name)
			} else {
				a = append(a, "--ro-bind", "/"+e.Name, "/"+e.Name)
			}
		}
		// A VM's own machine id (D-Bus reads both paths) and hosts file;
		// /var holds only what programs write to (/var/tmp, masked below).
		a = append(a,
			"--ro-bind-data", fd(fdMachineID), "/etc/machine-id",
			"--ro-bind-data", fd(fdHosts), "/etc/hosts",
			"--tmpfs", "/var", "--dir", "/var/lib/dbus",
			"--symlink", "/etc/machine-id", "/var/lib/dbus/machine-id",
		)
		// The font cache is derived from /usr/share/fonts alone; without it
		// every GTK app and the window manager rescan the fonts at start.
		a = append(a, "--ro-bind-try", "/var/cache/fontconfig", "/var/cache/fontconfig")
	}
	a = append(a, "--dev", "/dev", "--proc", "/proc")
	for _, m := range maskedDirs {
		a = append(a, "--tmpfs", m)
	}
	if l.Kind != vm.KindRootFS {
		for _, m := range l.Mask {
			if m = filepath.Clean(m); filepath.IsAbs(m) && !covered(m) {
				a = append(a, "--tmpfs", m)
			}
		}
	}
	a = append(a,
		"--dir", guestRuntime, "--chmod", "0700", guestRuntime,
		"--bind", l.Home, guestHome,
		"--bind", l.Shared, guestShared,
		"--bind", l.Run, guestRun,
		"--ro-bind", l.Agent, guestAgent,
		"--ro-bind-data", fd(fdPasswd), "/etc/passwd",
		"--ro-bind-data", fd(fdGroup), "/etc/group",
	)
	if l.Network == vm.NetworkInternet {
		a = append(a, "--ro-bind-data", fd(fdResolv), "/etc/resolv.conf")
	}
	if l.Kind != vm.KindRootFS {
		a = append(a, "--remount-ro", "/")
	}
	a = append(a,
		"--clearenv",
		"--setenv", "HOME", guestHome, "--setenv", "USER", "user", "--setenv", "LOGNAME", "user",
		"--setenv", "SHELL", "/bin/sh", "--setenv", "LANG", "C.UTF-8",
		"--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"--setenv", "XDG_RUNTIME_DIR", guestRuntime,
		"--setenv", "XDG_DATA_DIRS", "/usr/local/share:/usr/share",
		// The sandbox sees the host's CPUs; without cgroup CPU caps, Go would
		// run as many threads for a one-CPU machine's agent as the host has.
		"--setenv", "GOMAXPROCS", fmt.Sprint(max(l.CPUs, 1)),
		"--chdir", guestShared,
		"--info-fd", fd(fdInfo),
		"--", guestAgent,
		"--session", fmt.Sprintf("%dx%d", l.DisplayWidth, l.DisplayHeight),
		"--listen", "unix:"+guestSocket, "--shared", guestShared, "--log-level", l.LogLevel,
		"--key-fd", fd(fdKey),
	)
	return a
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// passwd and group are the sandbox's account files: the sandbox user and root.
func passwd() string {
	return fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\nuser:x:%d:%d:Hivecrew agent:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", guestUID, guestUID, guestHome)
}

func group() string {
	return fmt.Sprintf("root:x:0:\nuser:x:%d:\nnogroup:x:65534:\n", guestUID)
}

// resolvConf points at slirp4netns's DNS forwarder.
const resolvConf = "nameserver 10.0.2.3\n"
