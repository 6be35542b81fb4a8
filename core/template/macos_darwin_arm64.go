package template

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/macsetup"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm/vz"
)

// buildMacOS makes s.dir a macOS template bundle: the restore image
// (downloaded resumably, or a local .ipsw), then VZMacOSInstaller. The
// template then waits for its guided setup (status setup): Setup boots it
// with the guest agent kit.
func buildMacOS(ctx context.Context, s buildSpec) (result, error) {
	mac := s.manifest.MacOS
	ipsw, err := restoreImage(ctx, s, vz.LatestRestoreImageURL, nil)
	if err != nil {
		return result{}, err
	}
	r := s.manifest.Resources
	// The installer is a VM: it takes one of the host's two macOS VM
	// slots, which the pool counts while it runs.
	release, err := s.reserve(ctx, "the macOS installer of template "+filepath.Base(s.dir), r.CPUs, r.MemoryMB, func(reason string) {
		s.track.set(PhaseInstall, 0, reason)
	})
	if err != nil {
		return result{}, fmt.Errorf("wait for a VM slot for the installer: %w", err)
	}
	defer release()
	s.track.set(PhaseInstall, 0, "installing macOS from "+filepath.Base(ipsw))
	err = vz.InstallMacOS(ctx, vz.InstallSpec{Dir: s.dir, RestoreImage: ipsw, Name: s.manifest.DisplayName,
		CPUs: r.CPUs, MemoryMB: r.MemoryMB, DiskGB: max(r.DiskGB, 32), DisplayWidth: mac.Display.Width, DisplayHeight: mac.Display.Height,
		Progress: func(f float64) { s.track.set(PhaseInstall, f, fmt.Sprintf("installing macOS: %.0f%%", f*100)) }})
	if err != nil {
		b := vz.Bundle{Dir: s.dir}
		for _, f := range []string{b.Disk(), b.AuxStorage(), b.HardwareModel(), b.MachineID(), b.Config()} {
			os.Remove(f)
		}
		return result{}, err
	}
	fmt.Fprintf(s.log, "macOS installed into %s\n", s.dir)
	s.track.set(PhaseRegister, 1, "installed; the guided setup is next")
	return result{status: store.TemplateSetup,
		reason: "installed; do the guided setup once: hivecrew templates setup " + filepath.Base(s.dir)}, nil
}

// sealBundle makes dst a template bundle of a stopped macOS VM: its disk
// image and auxiliary storage are APFS clones (copy-on-write, instant),
// its hardware model, machine identifier and configuration are copied.
func sealBundle(ctx context.Context, vmDir, dst string, log io.Writer, track *tracker) error {
	from, to := vz.Bundle{Dir: vmDir}, vz.Bundle{Dir: dst}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range [][2]string{{from.Disk(), to.Disk()}, {from.AuxStorage(), to.AuxStorage()}} {
		if err := unix.Clonefile(f[0], f[1], 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EXDEV) {
				return errdefs.Unsupportedf("cannot clone %s: the VM and its templates must be on the same APFS volume", f[0])
			}
			return fmt.Errorf("clone %s: %w", filepath.Base(f[0]), err)
		}
	}
	track.set(PhaseCopy, 0.8, "disk cloned")
	for _, f := range [][2]string{{from.HardwareModel(), to.HardwareModel()}, {from.MachineID(), to.MachineID()}} {
		if err := copyFile(f[0], f[1], 0o600); err != nil {
			return err
		}
	}
	cfg, err := from.ReadConfig()
	if err != nil {
		return err
	}
	cfg.ID, cfg.TemplateID = filepath.Base(dst), ""
	if err := to.WriteConfig(cfg); err != nil {
		return err
	}
	fmt.Fprintf(log, "cloned %s into %s\n", vmDir, dst)
	return ctx.Err()
}

// screenReader reads the VM's screens with Apple's Vision framework.
func screenReader() (macsetup.Reader, error) { return macsetup.VisionReader{}, nil }
