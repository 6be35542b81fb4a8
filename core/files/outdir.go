package files

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// systemTrees are folders an output folder may be neither at nor below:
// what lands there is read by the system (cron.d, systemd units, profile
// scripts), not by the user.
var systemTrees = []string{
	"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot",
	"/proc", "/sys", "/dev", "/run", "/var", "/snap",
	// macOS
	"/System", "/Library", "/private", "/Applications", "/cores",
}

// systemFolders are folders an output folder may be below but not at.
var systemFolders = []string{"/", "/tmp", "/opt", "/srv", "/home", "/Users", "/root", "/mnt", "/media", "/Volumes"}

// CheckOutputDir refuses an output folder (absolute and clean) where a
// guest's files would act on the user's system rather than be read by
// them: a system location, the top of a home folder (where .bashrc and
// .ssh live), or any hidden folder (~/.config/autostart). Checked when a
// task is submitted, so that it fails before it runs.
func CheckOutputDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return errdefs.Invalidf("outputDirectory %q: want a clean absolute path", dir)
	}
	for _, elem := range strings.Split(dir, "/") {
		if strings.HasPrefix(elem, ".") {
			return errdefs.Invalidf("outputDirectory %q is inside a hidden folder (%s), where programs keep their settings", dir, elem)
		}
	}
	if parent := filepath.Dir(dir); parent == "/home" || parent == "/Users" || isHome(dir) {
		return errdefs.Invalidf("outputDirectory %q is a home folder's top level, where shell and login settings live: choose a folder inside it, e.g. %s", dir, filepath.Join(dir, "Downloads", "Hivecrew"))
	}
	// Below the user's temporary folder is the user's ($TMPDIR is under
	// /var/folders on macOS).
	if tmp := filepath.Clean(os.TempDir()); strings.HasPrefix(dir, tmp+"/") && tmp != "/" {
		return nil
	}
	for _, t := range systemTrees {
		if dir == t || strings.HasPrefix(dir, t+"/") {
			return errdefs.Invalidf("outputDirectory %q is a system location (in %s): choose a folder of your own, e.g. ~/Downloads/Hivecrew", dir, t)
		}
	}
	for _, f := range systemFolders {
		if dir == f {
			return errdefs.Invalidf("outputDirectory %q is a system location: choose a folder of your own, e.g. ~/Downloads/Hivecrew", dir)
		}
	}
	return nil
}

// isHome reports whether dir is this user's home or one listed in
// /etc/passwd.
func isHome(dir string) bool {
	if h, err := os.UserHomeDir(); err == nil && filepath.Clean(h) == dir {
		return true
	}
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), ":"); len(fields) >= 6 && fields[5] != "" && filepath.Clean(fields[5]) == dir {
			return true
		}
	}
	return false
}

// TaskFolderName names the folder a task's outputs get inside the default
// output folder: its title made safe as one visible, non-hidden name (at
// most 80 bytes), then the local time, e.g. "Quarterly report
// 2026-11-24 14.05.09".
func TaskFolderName(title string, at time.Time) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(title, "") {
		switch {
		case r == '/' || r == '\\' || r == ':' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			b.WriteRune(' ')
		default:
			b.WriteRune(r)
		}
	}
	name := strings.Join(strings.Fields(b.String()), " ")
	for len(name) > 80 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	name = strings.TrimRight(strings.TrimLeft(name, ". "), " ")
	if name == "" {
		name = "Task"
	}
	return name + " " + at.Format("2006-01-02 15.04.05")
}
