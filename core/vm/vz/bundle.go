// Package vz is the macOS VM backend: macOS guests in Apple's
// Virtualization framework through github.com/Code-Hex/vz/v3 (pinned
// v3.7.1). A VM is a bundle folder (config.json, disk.img, the auxiliary
// storage, the hardware model and a machine identifier of its own); a clone
// is an APFS clonefile of the template's disk and auxiliary storage with a
// fresh machine identifier. The bundle layout, configuration and error
// mapping are portable and tested everywhere; the darwin/arm64 files only
// turn them into vz objects.
//
// Connections to the guest agent do not use vz's VirtioSocketDevice.Connect:
// in v3.7.1 it closes the descriptor the VZVirtioSocketConnection owns, and
// the connection closes the same number again when it goes, by then perhaps
// another file of the helper's (the bug that crashed tart). No vz release
// that fixes it is served by the Go module proxy Hivecrew builds from, so
// the workaround is here: vsock_darwin_arm64.m connects through the
// framework, Go duplicates the descriptor while the connection is alive
// (adoptDescriptor, vsock.go), and the connection closes its own, once.
// TestVsockDescriptorClosedOnce fails on vz v3.7.1's way. Upgrading vz
// means re-checking this and the struct layouts the darwin files read.
package vz

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

// Bundle is a VM or template folder.
type Bundle struct{ Dir string }

// Files of a bundle.
func (b Bundle) Disk() string          { return filepath.Join(b.Dir, "disk.img") }
func (b Bundle) AuxStorage() string    { return filepath.Join(b.Dir, "aux.img") }
func (b Bundle) HardwareModel() string { return filepath.Join(b.Dir, "hardware-model.bin") }
func (b Bundle) MachineID() string     { return filepath.Join(b.Dir, "machine-id.bin") }
func (b Bundle) Config() string        { return filepath.Join(b.Dir, "config.json") }

// SavedState is where a suspended VM's machine state goes.
func (b Bundle) SavedState() string { return filepath.Join(b.Dir, "state.vzvmsave") }

// ConfigVersion is the version of config.json this build writes.
const ConfigVersion = 1

// Config is a bundle's config.json.
type Config struct {
	Version    int            `json:"version"`
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	TemplateID string         `json:"templateId"`
	CPUs       int            `json:"cpus"`
	MemoryMB   int            `json:"memoryMB"`
	DiskGB     int            `json:"diskGB"`
	Network    vm.NetworkMode `json:"network"`
	// Display in points; the guest runs at scale 1 (one pixel per point).
	DisplayWidth  int       `json:"displayWidth"`
	DisplayHeight int       `json:"displayHeight"`
	Created       time.Time `json:"created"`
	// MACAddress is the VM's network address, made once and kept: the
	// framework refuses to restore a saved state into a configuration
	// that differs (a new MAC at every boot did), and every new MAC takes
	// another lease from the host's NAT DHCP server.
	MACAddress string `json:"macAddress,omitempty"`
}

// configFor turns a spec into a bundle configuration with defaults.
func configFor(spec vm.Spec) Config {
	c := Config{
		Version: ConfigVersion, ID: spec.ID, Name: spec.Name, TemplateID: spec.Template.ID,
		CPUs: spec.CPUs, MemoryMB: spec.MemoryMB, DiskGB: spec.DiskGB, Network: spec.Network,
		DisplayWidth: spec.DisplayWidth, DisplayHeight: spec.DisplayHeight, Created: time.Now().UTC(),
	}
	if c.CPUs == 0 {
		c.CPUs = 2
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = 4096
	}
	if c.DisplayWidth == 0 {
		c.DisplayWidth, c.DisplayHeight = 1280, 800
	}
	if c.Network == "" {
		c.Network = vm.NetworkInternet
	}
	c.MACAddress = NewMACAddress()
	return c
}

// NewMACAddress returns a random locally administered unicast MAC address
// (as VZMACAddress.randomLocallyAdministeredAddress makes).
func NewMACAddress() string {
	var b [6]byte
	rand.Read(b[:])          // never fails (crypto/rand panics rather than return short)
	b[0] = b[0]&^0x01 | 0x02 // unicast, locally administered
	return net.HardwareAddr(b[:]).String()
}

// checkMAC accepts a locally administered unicast MAC address.
func checkMAC(s string) error {
	hw, err := net.ParseMAC(s)
	switch {
	case err != nil || len(hw) != 6:
		return errdefs.Invalidf("MAC address %q: want six bytes such as 02:00:00:00:00:01", s)
	case hw[0]&0x01 != 0:
		return errdefs.Invalidf("MAC address %s is a multicast address", s)
	case hw[0]&0x02 == 0:
		return errdefs.Invalidf("MAC address %s is not locally administered (it could clash with real hardware)", s)
	}
	return nil
}

// Validate checks a configuration against what the framework accepts.
func (c Config) Validate() error {
	switch {
	case c.Version != ConfigVersion:
		return errdefs.Unsupportedf("bundle config version %d; this Hivecrew reads %d", c.Version, ConfigVersion)
	case c.CPUs < 1 || c.CPUs > 64:
		return errdefs.Invalidf("%d CPUs: a macOS VM takes 1 to 64", c.CPUs)
	case c.MemoryMB < 2048:
		return errdefs.Invalidf("%d MB of memory: macOS guests need at least 2048 MB", c.MemoryMB)
	case c.Network != vm.NetworkInternet && c.Network != vm.NetworkOffline:
		return errdefs.Invalidf("network mode %q", c.Network)
	case c.DisplayWidth < 640 || c.DisplayHeight < 480:
		return errdefs.Invalidf("display %dx%d is too small", c.DisplayWidth, c.DisplayHeight)
	case c.MACAddress != "":
		return checkMAC(c.MACAddress)
	}
	return nil
}

// WriteConfig writes config.json atomically.
func (b Bundle) WriteConfig(c Config) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := b.Config() + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, b.Config())
}

// ReadConfig reads and validates config.json. A bundle written before
// config.json kept a MAC address gets one now, written back, so that it
// keeps it from then on.
func (b Bundle) ReadConfig() (Config, error) {
	data, err := os.ReadFile(b.Config())
	if err != nil {
		return Config{}, fmt.Errorf("read VM bundle %s: %w", b.Dir, err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, errdefs.Invalidf("VM bundle %s: config.json: %v", b.Dir, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	if c.MACAddress == "" {
		c.MACAddress = NewMACAddress()
		if err := b.WriteConfig(c); err != nil {
			return Config{}, fmt.Errorf("VM bundle %s: keep its new MAC address: %w", b.Dir, err)
		}
	}
	return c, nil
}

// CheckTemplate reports what a template bundle lacks.
func (b Bundle) CheckTemplate() error {
	for _, f := range []string{b.Disk(), b.AuxStorage(), b.HardwareModel()} {
		if _, err := os.Stat(f); err != nil {
			return errdefs.NotFoundf("template %s is incomplete: %s is missing (create it with hivecrew templates create)", b.Dir, filepath.Base(f))
		}
	}
	return nil
}

// cloneOp is one file of a clone: cloned copy-on-write, or copied.
type cloneOp struct {
	from, to string
	clone    bool
}

// clonePlan lists how a VM bundle is made from a template bundle: the disk
// and auxiliary storage are APFS clones; the hardware model is copied; the
// machine identifier is new (written by the caller).
func clonePlan(template, target Bundle) []cloneOp {
	return []cloneOp{
		{template.Disk(), target.Disk(), true},
		{template.AuxStorage(), target.AuxStorage(), true},
		{template.HardwareModel(), target.HardwareModel(), false},
	}
}

// Framework error codes (VZErrorCode).
const (
	codeInvalidConfiguration = 2
	codeInvalidState         = 3
	codeInvalidDiskImage     = 5
	codeLimitExceeded        = 6
	codeOutOfDiskSpace       = 8
	codeNotSupported         = 10
)

// classify maps a Virtualization framework error to Hivecrew's classes.
func classify(domain string, code int, description string, err error) error {
	if domain != "VZErrorDomain" {
		return err
	}
	switch code {
	case codeLimitExceeded:
		return fmt.Errorf("%w: macOS runs at most two macOS VMs at once (%s)", vm.ErrHostLimit, description)
	case codeInvalidConfiguration, codeInvalidDiskImage:
		return errdefs.Invalidf("%s", description)
	case codeInvalidState:
		return errdefs.Conflictf("%s", description)
	case codeOutOfDiskSpace:
		return errdefs.Unavailablef("out of disk space: %s", description)
	case codeNotSupported:
		return errdefs.Unsupportedf("%s", description)
	}
	return err
}

// Input devices of a macOS guest.
const (
	devMacKeyboard = "mac-keyboard"       // VZMacKeyboardConfiguration, macOS 14 hosts
	devMacTrackpad = "mac-trackpad"       // VZMacTrackpadConfiguration, macOS 13 hosts
	devUSBKeyboard = "usb-keyboard"       // VZUSBKeyboardConfiguration
	devUSBPointer  = "usb-screen-pointer" // VZUSBScreenCoordinatePointingDeviceConfiguration
)

// inputDevices lists the keyboard and the pointing devices of a macOS
// guest on a host running macOS hostMajor. A saved state can only be
// taken and restored without USB input devices
// (validateSaveRestoreSupportWithError), so where the host has the Mac
// keyboard and trackpad (macOS 14) the guest gets only those; older hosts
// get what they have.
func inputDevices(hostMajor int) (keyboard string, pointers []string) {
	switch {
	case hostMajor >= 14:
		return devMacKeyboard, []string{devMacTrackpad}
	case hostMajor == 13:
		return devUSBKeyboard, []string{devUSBPointer, devMacTrackpad}
	}
	return devUSBKeyboard, []string{devUSBPointer}
}

// majorVersion is the major number of a macOS version ("15.1.1": 15); 0
// when it cannot be read.
func majorVersion(v string) int {
	n := 0
	for _, r := range v {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
		if n > 1000 {
			return 0
		}
	}
	return n
}
