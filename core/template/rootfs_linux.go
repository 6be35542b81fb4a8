package template

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// buildEnv is the environment of every build step.
var buildEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/root", "DEBIAN_FRONTEND=noninteractive"}

// procAttr puts a build step in its own process group (killed as one)
// that dies with the helper.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// debianArch maps Go's architecture names to Debian's.
func debianArch() (string, error) {
	switch runtime.GOARCH {
	case "amd64", "arm64", "riscv64", "s390x":
		return runtime.GOARCH, nil
	case "386":
		return "i386", nil
	case "arm":
		return "armhf", nil
	case "ppc64le":
		return "ppc64el", nil
	}
	return "", errdefs.Unsupportedf("no Debian architecture for %s", runtime.GOARCH)
}

// tool finds a program the build needs.
func tool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p, nil
		}
	}
	return "", errdefs.Unsupportedf("building a Linux template needs %s (install it with make deps)", name)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// buildRootFS builds a Debian root filesystem in s.dir/rootfs:
// debootstrap of the base system, APT for the package set (both caching
// what they download under s.cacheDir), the guest agent, the guest's
// folders, the manifest's provisioning scripts and a clean-up. Everything
// that runs inside the new system runs in bubblewrap with private mounts,
// so nothing stays mounted when a step fails or the helper dies.
func buildRootFS(ctx context.Context, s buildSpec) (result, error) {
	if os.Geteuid() != 0 {
		return result{}, errdefs.Unsupportedf("building a Linux template needs the helper to run as root (debootstrap)")
	}
	if s.agent == "" {
		return result{}, errNoAgent
	}
	r := s.manifest.RootFS
	pkgs, err := r.PackageSet(s.options)
	if err != nil {
		return result{}, err
	}
	mirror := or(s.mirror, r.Mirror)
	arch, err := debianArch()
	if err != nil {
		return result{}, err
	}
	tools := map[string]string{}
	for _, name := range []string{"debootstrap", "bwrap", "unshare"} {
		if tools[name], err = tool(name); err != nil {
			return result{}, err
		}
	}
	version, err := agentVersion(ctx, s.agent)
	if err != nil {
		return result{}, err
	}
	target := filepath.Join(s.dir, "rootfs.partial")
	final := filepath.Join(s.dir, "rootfs")
	if fileExists(final) {
		return result{}, errdefs.Conflictf("%s exists", final)
	}
	if err := os.RemoveAll(target); err != nil {
		return result{}, err
	}
	debs := filepath.Join(s.cacheDir, "debootstrap", r.Suite+"-"+arch)
	apt := filepath.Join(s.cacheDir, "apt", r.Suite+"-"+arch)
	for _, d := range []string{debs, apt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return result{}, fmt.Errorf("create the download cache: %w", err)
		}
	}
	unlock, err := lockCache(ctx, filepath.Join(s.cacheDir, r.Suite+"-"+arch+".lock"), s.track)
	if err != nil {
		return result{}, err
	}
	defer unlock()
	fmt.Fprintf(s.log, "manifest %s version %d, suite %s (%s) from %s\npackages: %s\ncache: %s\n",
		s.manifest.Name, s.manifest.Version, r.Suite, arch, mirror, strings.Join(pkgs, " "), s.cacheDir)

	// 1. The base system, in a private mount namespace (debootstrap mounts
	// /proc and /sys in the target and may leave them on failure).
	t := s.track
	t.set(PhaseBootstrap, 0, "debootstrap "+r.Suite+" from "+mirror)
	started := time.Now()
	comps := r.Components
	if len(comps) == 0 {
		comps = []string{"main"}
	}
	dp := newDebootstrapProgress(90)
	cmd := exec.CommandContext(ctx, tools["unshare"], "--mount", "--propagation", "private", "--",
		tools["debootstrap"], "--variant="+or(r.Variant, "minbase"), "--arch="+arch, "--components="+strings.Join(comps, ","),
		"--cache-dir="+debs, r.Suite, target, mirror)
	cmd.Env = buildEnv
	if err := command(ctx, s.log, func(line string) {
		if f, msg, ok := dp.line(line); ok {
			t.set(PhaseBootstrap, f, msg)
		}
	}, "debootstrap", cmd); err != nil {
		return result{}, err
	}
	fmt.Fprintf(s.log, "# base system in %s\n", time.Since(started).Round(time.Second))

	// 2. The package set, with APT inside the new system.
	started = time.Now()
	if err := writeFiles(target, map[string]string{
		"usr/sbin/policy-rc.d":   "#!/bin/sh\n# No services start while a Hivecrew template is built.\nexit 101\n",
		"etc/apt/sources.list":   strings.Join(r.SourceLines(mirror), "\n") + "\n",
		"etc/dpkg/dpkg.cfg.d/hc": "force-unsafe-io\n",
	}); err != nil {
		return result{}, err
	}
	os.Chmod(filepath.Join(target, "usr/sbin/policy-rc.d"), 0o755)
	in := chroot{bwrap: tools["bwrap"], root: target, binds: [][2]string{{apt, "/var/cache/apt/archives"}}}
	t.set(PhasePackages, 0, "updating the package lists")
	if err := in.run(ctx, s, nil, "apt-get update", nil, "apt-get", "update", "-q", "-o", "Acquire::Retries=3"); err != nil {
		return result{}, err
	}
	install := append([]string{"apt-get", "install", "-y", "-q", "--no-install-recommends",
		"-o", "APT::Keep-Downloaded-Packages=true", "-o", "APT::Status-Fd=3", "-o", "Dpkg::Use-Pty=0", "-o", "Acquire::Retries=3"}, pkgs...)
	if err := in.run(ctx, s, func(line string) {
		if f, msg, ok := aptProgress(line); ok {
			t.set(PhasePackages, f, msg)
		}
	}, "apt-get install", nil, install...); err != nil {
		return result{}, err
	}
	fmt.Fprintf(s.log, "# packages in %s\n", time.Since(started).Round(time.Second))

	// 3. The guest agent, the guest's folders, provisioning, clean-up.
	t.set(PhaseConfigure, 0, "installing the guest agent "+version)
	agentDst := filepath.Join(target, r.AgentPath)
	if err := os.MkdirAll(filepath.Dir(agentDst), 0o755); err != nil {
		return result{}, err
	}
	if err := copyFile(s.agent, agentDst, 0o755); err != nil {
		return result{}, fmt.Errorf("install the guest agent: %w", err)
	}
	for _, g := range r.GuestWritable {
		p := filepath.Join(target, g)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return result{}, err
		}
		if s.owner != nil {
			if err := lchownTree(p, s.owner.UID, s.owner.GID); err != nil {
				return result{}, fmt.Errorf("give %s to the guest: %w", g, err)
			}
		}
	}
	if len(r.Provision) > 0 {
		scripts := filepath.Join(s.dir, "provision.partial")
		if err := os.MkdirAll(scripts, 0o755); err != nil {
			return result{}, err
		}
		for i, name := range r.Provision {
			data, err := s.manifest.Script(name)
			if err != nil {
				return result{}, err
			}
			if err := os.WriteFile(filepath.Join(scripts, name), data, 0o755); err != nil {
				return result{}, err
			}
			t.set(PhaseConfigure, 0.2+0.6*float64(i)/float64(len(r.Provision)), "running "+name)
			env := []string{"HIVECREW_TEMPLATE_OPTIONS", strings.Join(s.options.Flags(), " ")}
			run := chroot{bwrap: in.bwrap, root: target, binds: [][2]string{{apt, "/var/cache/apt/archives"}}, roBinds: [][2]string{{scripts, "/run/hivecrew-provision"}}}
			if err := run.run(ctx, s, nil, name, env, "/bin/sh", "-eu", "/run/hivecrew-provision/"+name); err != nil {
				return result{}, err
			}
		}
		os.RemoveAll(scripts)
	}
	t.set(PhaseConfigure, 0.9, "cleaning up")
	if err := cleanRootFS(target); err != nil {
		return result{}, err
	}
	info, _ := json.MarshalIndent(map[string]any{
		"manifest": s.manifest.Name, "version": s.manifest.Version, "options": s.options.Flags(),
		"agentVersion": version, "built": time.Now().UTC().Format(time.RFC3339),
	}, "", "  ")
	if err := writeFiles(target, map[string]string{"etc/hivecrew-template.json": string(info) + "\n"}); err != nil {
		return result{}, err
	}
	os.Chmod(target, 0o755)
	t.set(PhaseRegister, 0, "registering")
	if err := os.Rename(target, final); err != nil {
		return result{}, err
	}
	return result{agentVersion: version}, nil
}

// lockCache takes the download cache's lock for one suite and
// architecture: another helper (or another run of the tests) may be
// building with the same cache, and APT and debootstrap do not share a
// package folder. It waits while ctx allows.
func lockCache(ctx context.Context, path string, t *tracker) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the download cache: %w", err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock the download cache: %w", err)
		}
		if !told {
			t.set(PhaseQueued, 0, "waiting for another build that uses the download cache")
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// cleanRootFS removes what only the build needed: the service guard,
// downloaded packages, package lists, the build's resolver configuration
// (an empty file stays: sandboxes bind theirs onto it).
func cleanRootFS(root string) error {
	os.Remove(filepath.Join(root, "usr/sbin/policy-rc.d"))
	os.Remove(filepath.Join(root, "etc/dpkg/dpkg.cfg.d/hc"))
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*_*", "var/log/apt/*", "debootstrap"} {
		matches, _ := filepath.Glob(filepath.Join(root, glob))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return fmt.Errorf("clean up %s: %w", m, err)
			}
		}
	}
	return writeFiles(root, map[string]string{"etc/resolv.conf": "", "etc/hostname": "hivecrew\n"})
}

// writeFiles writes files (paths relative to root); a symbolic link in
// the way is replaced, never followed.
func writeFiles(root string, files map[string]string) error {
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			os.Remove(p)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
	}
	return nil
}

// lchownTree gives a folder and what it holds to an account, never
// following a symbolic link.
func lchownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// chroot runs commands as root inside a root filesystem under
// construction, with bubblewrap: private mount, PID, IPC and UTS
// namespaces, the host's network and resolver, binds of the caches.
type chroot struct {
	bwrap, root    string
	binds, roBinds [][2]string
}

// run runs argv in the root filesystem; onStatus, if set, receives the
// lines the command writes to file descriptor 3. env is name, value pairs.
func (c chroot) run(ctx context.Context, s buildSpec, onStatus func(string), name string, env []string, argv ...string) error {
	args := []string{"--bind", c.root, "/", "--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp", "--tmpfs", "/run",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "hivecrew-build", "--die-with-parent"}
	if fileExists("/etc/resolv.conf") {
		args = append(args, "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf")
	}
	for _, b := range c.binds {
		args = append(args, "--bind", b[0], b[1])
	}
	for _, b := range c.roBinds {
		args = append(args, "--ro-bind", b[0], b[1])
	}
	args = append(args, "--clearenv")
	for _, kv := range buildEnv {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	for i := 0; i+1 < len(env); i += 2 {
		args = append(args, "--setenv", env[i], env[i+1])
	}
	args = append(append(args, "--chdir", "/", "--"), argv...)
	cmd := exec.CommandContext(ctx, c.bwrap, args...)
	cmd.Env = buildEnv
	var done chan struct{}
	if onStatus != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		cmd.ExtraFiles = []*os.File{w}
		done = make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				onStatus(sc.Text())
			}
		}()
		defer func() {
			w.Close()
			<-done
		}()
	}
	return command(ctx, s.log, nil, name, cmd)
}
