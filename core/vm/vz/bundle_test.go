package vz

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

func TestConfigRoundTripAndValidation(t *testing.T) {
	b := Bundle{Dir: t.TempDir()}
	c := configFor(vm.Spec{ID: "vm1", Name: "vm1", Template: vm.Template{ID: "macos-15-base"}, MemoryMB: 8192})
	if c.CPUs != 2 || c.DisplayWidth != 1280 || c.Network != vm.NetworkInternet {
		t.Fatalf("defaults: %+v", c)
	}
	if err := b.WriteConfig(c); err != nil {
		t.Fatal(err)
	}
	got, err := b.ReadConfig()
	if err != nil || got.ID != "vm1" || got.MemoryMB != 8192 || got.TemplateID != "macos-15-base" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	bad := c
	bad.MemoryMB = 1024
	if err := bad.Validate(); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "2048") {
		t.Fatalf("1 GB macOS VM = %v", err)
	}
	bad = c
	bad.Version = 99
	if err := bad.Validate(); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Fatalf("future config = %v", err)
	}
}

func TestTemplateCheckAndClonePlan(t *testing.T) {
	tmpl := Bundle{Dir: t.TempDir()}
	if err := tmpl.CheckTemplate(); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "disk.img") {
		t.Fatalf("empty template = %v", err)
	}
	for _, f := range []string{tmpl.Disk(), tmpl.AuxStorage(), tmpl.HardwareModel()} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	if err := tmpl.CheckTemplate(); err != nil {
		t.Fatal(err)
	}
	target := Bundle{Dir: filepath.Join(t.TempDir(), "vm")}
	plan := clonePlan(tmpl, target)
	clones := 0
	for _, op := range plan {
		if op.to == target.MachineID() {
			t.Fatal("the machine identifier is copied: clones would share an identity")
		}
		if op.clone {
			clones++
		}
	}
	if clones != 2 {
		t.Fatalf("plan clones %d files, want the disk and the auxiliary storage", clones)
	}
}

func TestClassify(t *testing.T) {
	other := errors.New("raw")
	if err := classify("VZErrorDomain", 6, "limit", other); !vm.IsHostLimit(err) || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("code 6 = %v, want the host limit", err)
	}
	if err := classify("VZErrorDomain", 2, "bad config", other); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("code 2 = %v", err)
	}
	if err := classify("NSPOSIXErrorDomain", 6, "x", other); err != other {
		t.Fatalf("another domain's code 6 = %v", err)
	}
}
