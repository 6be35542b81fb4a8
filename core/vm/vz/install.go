package vz

import (
	"path/filepath"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

// InstallSpec describes a new macOS bundle (InstallMacOS, darwin/arm64).
type InstallSpec struct {
	// Dir is the new bundle (a template's folder); RestoreImage a local .ipsw.
	Dir, RestoreImage           string
	Name                        string
	CPUs, MemoryMB, DiskGB      int
	DisplayWidth, DisplayHeight int
	// Progress, if set, is told the installer's progress, 0 to 1.
	Progress func(fraction float64)
}

func (s InstallSpec) check() error {
	if !filepath.IsAbs(s.Dir) || !filepath.IsAbs(s.RestoreImage) {
		return errdefs.Invalidf("a macOS install needs an absolute bundle folder and restore image")
	}
	if s.DiskGB < 32 {
		return errdefs.Invalidf("a %d GB disk is too small for macOS (32 GB at least)", s.DiskGB)
	}
	return nil
}

// config is the bundle configuration of an install, with resources raised
// to the restore image's minimums (minCPUs, minMemoryMB).
func (s InstallSpec) config(minCPUs, minMemoryMB int) Config {
	c := configFor(vm.Spec{ID: filepath.Base(s.Dir), Name: s.Name, CPUs: max(s.CPUs, minCPUs), MemoryMB: max(s.MemoryMB, minMemoryMB),
		DiskGB: s.DiskGB, Network: vm.NetworkInternet, DisplayWidth: s.DisplayWidth, DisplayHeight: s.DisplayHeight})
	c.Created = time.Now().UTC()
	return c
}
