package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// stageRoot holds, when the helper is root, one folder per running sandbox
// where the machine's folders are bind-mounted for bubblewrap. bubblewrap
// runs as the unprivileged sandbox account and resolves its sources by
// path; the data directory (under /root, say) is not for that account to
// walk, so it sees only these staged views.
const stageRoot = "/run/hivecrew-sandbox"

// hostRoot lists the host's top-level entries a host-template sandbox
// binds. Binding "/" as a whole would copy every mount below it, staged
// folders of other sandboxes included, and bubblewrap then fails when one
// of them is unmounted while it remounts the copies read-only ("Can't bind
// mount ... No such file or directory"); /run, where staging lives, is
// never bound.
func hostRoot() ([]RootEntry, error) {
	ents, err := os.ReadDir("/")
	if err != nil {
		return nil, fmt.Errorf("read /: %w", err)
	}
	var out []RootEntry
	for _, e := range ents {
		if !boundRoot[e.Name()] {
			continue
		}
		re := RootEntry{Name: e.Name()}
		if e.Type()&os.ModeSymlink != 0 {
			if re.Link, err = os.Readlink("/" + e.Name()); err != nil {
				return nil, fmt.Errorf("read /%s: %w", e.Name(), err)
			}
		}
		out = append(out, re)
	}
	return append(out, hostEtc()...), nil
}

// sources are the host paths bubblewrap binds into a sandbox.
type sources struct {
	home, shared, run, agent, root string
}

// stage makes the sources of m reachable for the sandbox account and
// returns them with a cleanup. Without an account switch the machine's own
// paths serve.
func (m *Machine) stage() (sources, func() error, error) {
	own := sources{home: m.path("home"), shared: m.path("shared"), run: m.path("run"), agent: m.b.cfg.AgentBinary}
	if m.id.cred == nil {
		if m.spec.Template.Kind == "rootfs" {
			return sources{}, nil, errors.New("rootfs templates need the helper to run as root")
		}
		return own, func() error { return nil }, nil
	}
	dir := filepath.Join(stageRoot, m.spec.ID)
	if err := unstage(dir); err != nil {
		return sources{}, nil, err
	}
	if err := os.MkdirAll(stageRoot, 0o711); err != nil {
		return sources{}, nil, err
	}
	os.Chmod(stageRoot, 0o711)
	// The folder is the sandbox account's alone: the bind mounts below it
	// show the machine's home, shared and run folders with their own
	// modes, which would otherwise let any local user read a running VM's
	// files past the data folder's 0700 (stageRoot is 0711: no listing).
	if err := os.Mkdir(dir, 0o700); err != nil {
		return sources{}, nil, err
	}
	if err := os.Chown(dir, m.id.uid, m.id.gid); err != nil {
		os.Remove(dir)
		return sources{}, nil, fmt.Errorf("stage: %w", err)
	}
	s := sources{home: filepath.Join(dir, "home"), shared: filepath.Join(dir, "shared"), run: filepath.Join(dir, "run"), agent: filepath.Join(dir, "hivecrew-guestagent")}
	cleanup := func() error { return unstage(dir) }
	for _, b := range []struct{ from, to string }{{own.home, s.home}, {own.shared, s.shared}, {own.run, s.run}} {
		if err := os.Mkdir(b.to, 0o755); err != nil {
			cleanup()
			return sources{}, nil, err
		}
		if err := unix.Mount(b.from, b.to, "", unix.MS_BIND, ""); err != nil {
			cleanup()
			return sources{}, nil, fmt.Errorf("stage %s: %w", b.from, err)
		}
	}
	if f, err := os.OpenFile(s.agent, os.O_CREATE|os.O_WRONLY, 0o755); err == nil {
		f.Close()
	}
	if err := unix.Mount(own.agent, s.agent, "", unix.MS_BIND, ""); err != nil {
		cleanup()
		return sources{}, nil, fmt.Errorf("stage the guest agent: %w", err)
	}
	if m.spec.Template.Kind == "rootfs" {
		s.root = filepath.Join(dir, "root")
		ov := m.overlay()
		ov.merged = s.root
		if m.id.slot {
			// The template's files of the sandbox account are this
			// machine's uid's.
			sb := m.b.id
			ov.shift = &[2]idShift{{uint32(sb.uid), uint32(m.id.uid)}, {uint32(sb.gid), uint32(m.id.gid)}}
			ov.views = dir
		}
		if err := ov.mount(); err != nil {
			cleanup()
			return sources{}, nil, err
		}
	}
	return s, cleanup, nil
}

// unstage unmounts and removes a staging folder, including one left by a
// helper that crashed.
func unstage(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
