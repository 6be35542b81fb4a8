//go:build darwin && arm64

package vz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	codehex "github.com/Code-Hex/vz/v3"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

// LatestRestoreImageURL asks Apple's catalogue for the newest macOS restore
// image this Mac supports.
func LatestRestoreImageURL(ctx context.Context) (string, error) {
	u, err := codehex.GetLatestSupportedMacOSRestoreImageURL()
	if err != nil {
		return "", nsError(err)
	}
	return u, nil
}

// InstallMacOS makes Dir a new macOS bundle from a restore image: the
// hardware model the image asks for, a new machine identifier, auxiliary
// storage created for that model, a sparse disk of DiskGB and
// config.json; then VZMacOSInstaller installs macOS into it, reporting
// its progress (0..1). Resources below what the image needs are raised to
// its minimum.
func InstallMacOS(ctx context.Context, s InstallSpec) error {
	if err := s.check(); err != nil {
		return err
	}
	img, err := codehex.LoadMacOSRestoreImageFromPath(s.RestoreImage)
	if err != nil {
		return fmt.Errorf("load restore image %s: %w", s.RestoreImage, nsError(err))
	}
	req := img.MostFeaturefulSupportedConfiguration()
	if req == nil {
		return errdefs.Unsupportedf("this Mac cannot run macOS %s (restore image %s)", img.OperatingSystemVersion(), filepath.Base(s.RestoreImage))
	}
	hw := req.HardwareModel()
	if !hw.Supported() {
		return errdefs.Unsupportedf("this Mac does not support the hardware model of macOS %s", img.OperatingSystemVersion())
	}
	cfg := s.config(int(req.MinimumSupportedCPUCount()), int(req.MinimumSupportedMemorySize()>>20))
	if err := cfg.Validate(); err != nil {
		return err
	}
	b := Bundle{Dir: s.Dir}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(b.HardwareModel(), hw.DataRepresentation(), 0o600); err != nil {
		return err
	}
	mid, err := codehex.NewMacMachineIdentifier()
	if err != nil {
		return nsError(err)
	}
	if err := os.WriteFile(b.MachineID(), mid.DataRepresentation(), 0o600); err != nil {
		return err
	}
	if _, err := codehex.NewMacAuxiliaryStorage(b.AuxStorage(), codehex.WithCreatingMacAuxiliaryStorage(hw)); err != nil {
		return fmt.Errorf("create the auxiliary storage: %w", nsError(err))
	}
	disk, err := os.OpenFile(b.Disk(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = disk.Truncate(int64(cfg.DiskGB) << 30) // sparse on APFS
	if cerr := disk.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create the disk image: %w", err)
	}
	if err := b.WriteConfig(cfg); err != nil {
		return err
	}
	m := &Machine{spec: vm.Spec{ID: cfg.ID, Name: cfg.Name, Dir: s.Dir}, cfg: cfg, bundle: b}
	for _, d := range []string{"inbox", "outbox", "workspace"} {
		os.MkdirAll(filepath.Join(m.spec.SharedDir(), d), 0o755)
	}
	config, err := m.configuration()
	if err != nil {
		return err
	}
	v, err := codehex.NewVirtualMachine(config)
	if err != nil {
		return nsError(err)
	}
	inst, err := codehex.NewMacOSInstaller(v, s.RestoreImage)
	if err != nil {
		return nsError(err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-inst.Done():
				return
			case <-t.C:
				if s.Progress != nil {
					s.Progress(inst.FractionCompleted())
				}
			}
		}
	}()
	if err := inst.Install(ctx); err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("install macOS: %w", nsError(err))
	}
	if s.Progress != nil {
		s.Progress(1)
	}
	return nil
}
