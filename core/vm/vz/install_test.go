package vz

import (
	"errors"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// TestInstallSpec: a macOS install needs absolute paths and a usable disk,
// and gets at least the resources the restore image asks for.
func TestInstallSpec(t *testing.T) {
	ok := InstallSpec{Dir: "/T/macos-15-base", RestoreImage: "/cache/x.ipsw", CPUs: 2, MemoryMB: 2048, DiskGB: 64, DisplayWidth: 1280, DisplayHeight: 800}
	if err := ok.check(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []InstallSpec{{Dir: "rel", RestoreImage: "/x.ipsw", DiskGB: 64}, {Dir: "/d", RestoreImage: "x.ipsw", DiskGB: 64}, {Dir: "/d", RestoreImage: "/x.ipsw", DiskGB: 16}} {
		if err := bad.check(); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("check(%+v) = %v", bad, err)
		}
	}
	c := ok.config(4, 8192)
	if c.ID != "macos-15-base" || c.CPUs != 4 || c.MemoryMB != 8192 || c.DiskGB != 64 || c.Network != "internet" || c.Validate() != nil {
		t.Errorf("config = %+v (%v)", c, c.Validate())
	}
	if c := ok.config(1, 1024); c.CPUs != 2 || c.MemoryMB != 2048 {
		t.Errorf("resources above the minimums were lowered: %+v", c)
	}
}
