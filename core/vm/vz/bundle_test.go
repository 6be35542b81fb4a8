package vz

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// TestMACAddressIsKept answers issue 16.7: every VM gets its own MAC once,
// in config.json, and keeps it across reads (boots); a bundle from before
// gets one on its next read and keeps that. A restore needs the same
// configuration, and a new MAC per boot took a new NAT DHCP lease.
func TestMACAddressIsKept(t *testing.T) {
	a := configFor(vm.Spec{ID: "a", MemoryMB: 4096})
	b := configFor(vm.Spec{ID: "b", MemoryMB: 4096})
	for _, c := range []Config{a, b} {
		if err := checkMAC(c.MACAddress); err != nil {
			t.Fatalf("new config's MAC: %v", err)
		}
	}
	if a.MACAddress == b.MACAddress {
		t.Fatalf("two VMs share the MAC %s", a.MACAddress)
	}
	bundle := Bundle{Dir: t.TempDir()}
	if err := bundle.WriteConfig(a); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		got, err := bundle.ReadConfig()
		if err != nil || got.MACAddress != a.MACAddress {
			t.Fatalf("read %d: MAC %q, %v; want %q", i, got.MACAddress, err, a.MACAddress)
		}
	}

	// A config.json from before has none: it gets one, written back.
	old := a
	old.MACAddress = ""
	if err := bundle.WriteConfig(old); err != nil {
		t.Fatal(err)
	}
	first, err := bundle.ReadConfig()
	if err != nil || checkMAC(first.MACAddress) != nil {
		t.Fatalf("old bundle: %q %v", first.MACAddress, err)
	}
	again, err := bundle.ReadConfig()
	if err != nil || again.MACAddress != first.MACAddress {
		t.Fatalf("old bundle's MAC changed: %q then %q (%v)", first.MACAddress, again.MACAddress, err)
	}

	// A hand-edited or damaged MAC is refused with a clear error.
	for _, bad := range []string{"nonsense", "01:00:5e:00:00:01", "00:1b:63:84:45:e6", "02:00:00:00:00:00:00:01"} {
		c := a
		c.MACAddress = bad
		if err := c.Validate(); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "MAC") {
			t.Errorf("MAC %q: %v", bad, err)
		}
	}
	for i := 0; i < 200; i++ {
		if err := checkMAC(NewMACAddress()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInputDevices answers issue 16.7: on the hosts Hivecrew supports
// (macOS 15) a macOS guest has only the Mac keyboard and trackpad, since
// the framework refuses to save or restore a VM with USB input devices.
func TestInputDevices(t *testing.T) {
	for _, host := range []int{14, 15, 26} {
		kb, ptrs := inputDevices(host)
		if kb != devMacKeyboard || len(ptrs) != 1 || ptrs[0] != devMacTrackpad {
			t.Errorf("macOS %d host: %s %v", host, kb, ptrs)
		}
	}
	if kb, ptrs := inputDevices(13); kb != devUSBKeyboard || !slices.Contains(ptrs, devMacTrackpad) {
		t.Errorf("macOS 13 host: %s %v", kb, ptrs)
	}
	if kb, ptrs := inputDevices(0); kb != devUSBKeyboard || len(ptrs) != 1 || ptrs[0] != devUSBPointer {
		t.Errorf("unknown host: %s %v", kb, ptrs)
	}
	for v, want := range map[string]int{"15.1.1": 15, "26.0": 26, "14": 14, "": 0, "x15": 0, "999999999999": 0} {
		if got := majorVersion(v); got != want {
			t.Errorf("majorVersion(%q) = %d, want %d", v, got, want)
		}
	}
}
