package files

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/hostpath"
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
	// Below the user's temporary folder or home folder is the user's
	// ($TMPDIR is under /var/folders on macOS, really /private/var/folders;
	// homes are in /var/home on some systems).
	for _, mine := range usersFolders() {
		if strings.HasPrefix(dir, mine+"/") && mine != "/" {
			return nil
		}
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

// usersFolders are the user's temporary and home folders, as named and as
// they really are.
func usersFolders() []string {
	var out []string
	dirs := []string{os.TempDir()}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		dirs = append(dirs, h)
	}
	for _, d := range dirs {
		out = append(out, filepath.Clean(d))
		if real, err := filepath.EvalSymlinks(d); err == nil {
			out = append(out, real)
		}
	}
	return out
}

// CheckOutputFolder checks an output folder (absolute and clean) when a
// task is submitted, and returns its real path, where the outputs will go:
// the real path too must pass CheckOutputDir; the links on the way must be
// owners' (or root's) and the folders that exist theirs too (see
// hostpath.Resolve and hostpath.CheckDir); and it may not be, be inside or
// hold a folder of fence (the helper's data folder). Errors are of class
// invalid and begin with "outputDirectory".
func CheckOutputFolder(dir string, owners hostpath.Owners, fence hostpath.Fence) (string, error) {
	if err := CheckOutputDir(dir); err != nil {
		return "", err
	}
	real, err := realOutputDir(dir, owners)
	if err != nil {
		return "", err
	}
	chain, whole, err := hostpath.CheckDir(real, owners)
	if err != nil {
		return "", fmt.Errorf("outputDirectory: %w", err)
	}
	if whole {
		err = fence.Check("outputDirectory "+real, chain)
	} else {
		err = fence.CheckWithin("outputDirectory "+real, chain)
	}
	return real, err
}

// OpenOutputFolder opens an output folder to place a task's outputs in,
// making what is missing, with CheckOutputFolder's checks made again on
// what the folder is now: it may have been replaced by a link, or made by
// another user, since the task was submitted. No component is followed if
// it is a link (hostpath.OpenDir).
func OpenOutputFolder(dir string, owners hostpath.Owners, fence hostpath.Fence) (*hostpath.Dir, error) {
	real, err := CheckOutputFolder(dir, owners, fence) // before anything is made
	if err != nil {
		return nil, err
	}
	d, err := hostpath.OpenDir(real, owners, true)
	if err != nil {
		return nil, fmt.Errorf("outputDirectory: %w", err)
	}
	if err := fence.Check("outputDirectory "+real, d.Chain); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// realOutputDir resolves dir's links (owners' only) and checks where it
// really is.
func realOutputDir(dir string, owners hostpath.Owners) (string, error) {
	real, err := hostpath.Resolve(dir, owners)
	if err != nil {
		return "", fmt.Errorf("outputDirectory: %w", err)
	}
	if real != dir {
		if err := CheckOutputDir(real); err != nil {
			return "", fmt.Errorf("%w (%s leads there)", err, dir)
		}
	}
	return real, nil
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
