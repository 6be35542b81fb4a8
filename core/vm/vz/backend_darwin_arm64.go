//go:build darwin && arm64

package vz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	codehex "github.com/Code-Hex/vz/v3"
	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Options configure the backend. Log is required.
type Options struct {
	Log *slog.Logger
	// StopGrace is how long Stop waits after asking the guest to shut down
	// before forcing it; default 30 s.
	StopGrace time.Duration
	// GuestPort is the guest agent's vsock port; default protocol.DefaultVsockPort.
	GuestPort uint32
}

// Backend runs macOS guests.
type Backend struct{ opts Options }

var _ vm.Backend = (*Backend)(nil)

// New returns the backend.
func New(o Options) (*Backend, error) {
	if o.Log == nil {
		return nil, errors.New("vz backend: Log is required")
	}
	if o.StopGrace == 0 {
		o.StopGrace = 30 * time.Second
	}
	if o.GuestPort == 0 {
		o.GuestPort = protocol.DefaultVsockPort
	}
	return &Backend{opts: o}, nil
}

// Capabilities implements vm.Backend. macOS allows two macOS guests at once.
func (b *Backend) Capabilities() vm.Capabilities {
	return vm.Capabilities{
		Name: "vz", GuestOS: "macos", Kinds: []vm.TemplateKind{vm.KindMacOS},
		Networks:   []vm.NetworkMode{vm.NetworkOffline, vm.NetworkInternet},
		MaxRunning: 2, SaveRestore: true, Display: true,
	}
}

// Create implements vm.Backend: clonefile the template's disk and auxiliary
// storage, copy its hardware model, make a fresh machine identifier.
func (b *Backend) Create(ctx context.Context, spec vm.Spec) (_ vm.Machine, err error) {
	if spec.Template.Kind != vm.KindMacOS {
		return nil, errdefs.Unsupportedf("the vz backend runs macOS templates, not %q", spec.Template.Kind)
	}
	tmpl, target := Bundle{Dir: spec.Template.Path}, Bundle{Dir: spec.Dir}
	if err := tmpl.CheckTemplate(); err != nil {
		return nil, err
	}
	cfg := configFor(spec)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.Mkdir(spec.Dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, errdefs.Conflictf("VM folder %s already exists", spec.Dir)
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(spec.Dir)
		}
	}()
	for _, op := range clonePlan(tmpl, target) {
		if op.clone {
			if err := unix.Clonefile(op.from, op.to, 0); err != nil {
				if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EXDEV) {
					return nil, errdefs.Unsupportedf("cannot clone %s: templates and VMs must be on the same APFS volume", op.from)
				}
				return nil, fmt.Errorf("clone %s: %w", op.from, err)
			}
		} else if err := files.Put(op.from, op.to, false); err != nil {
			return nil, fmt.Errorf("copy %s: %w", op.from, err)
		}
	}
	id, err := codehex.NewMacMachineIdentifier()
	if err != nil {
		return nil, fmt.Errorf("new machine identifier: %w", err)
	}
	if err := os.WriteFile(target.MachineID(), id.DataRepresentation(), 0o600); err != nil {
		return nil, err
	}
	if err := target.WriteConfig(cfg); err != nil {
		return nil, err
	}
	return b.Load(ctx, spec)
}

// Load implements vm.Backend.
func (b *Backend) Load(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	cfg, err := Bundle{Dir: spec.Dir}.ReadConfig()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{protocol.InboxDir, protocol.OutboxDir, protocol.WorkspaceDir} {
		if err := os.MkdirAll(filepath.Join(spec.SharedDir(), d), 0o755); err != nil {
			return nil, err
		}
	}
	closed := make(chan struct{})
	close(closed)
	return &Machine{b: b, spec: spec, cfg: cfg, bundle: Bundle{Dir: spec.Dir}, exited: closed,
		status: vm.Status{State: vm.StateStopped, Limits: vm.Limits{
			Processes: "VM (its own kernel)", Memory: fmt.Sprintf("VM: %d MB", cfg.MemoryMB),
			CPU: fmt.Sprintf("VM: %d vCPUs", cfg.CPUs), Disk: "VM: its disk image", UID: "the helper's (Virtualization framework)"}}}, nil
}

// Machine is a macOS VM.
type Machine struct {
	b      *Backend
	spec   vm.Spec
	cfg    Config
	bundle Bundle

	// boots lets Stop and Delete end a boot in progress.
	boots vm.StartGuard

	// mu guards everything below.
	mu       sync.Mutex
	v        *codehex.VirtualMachine
	status   vm.Status
	exited   chan struct{}
	stopping bool
	// key is the boot key of the current run: the guest agent learns it
	// in the first hello (GuestKey), and keeps it across a save and
	// restore.
	key []byte
}

var (
	_ vm.Machine         = (*Machine)(nil)
	_ vm.SaveRestorer    = (*Machine)(nil)
	_ vm.Halter          = (*Machine)(nil)
	_ vm.GuestShutdowner = (*Machine)(nil)
)

func (m *Machine) Spec() vm.Spec { return m.spec }

func (m *Machine) Status() vm.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

func (m *Machine) Exited() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited
}

// nsError maps a framework error to Hivecrew's classes.
func nsError(err error) error {
	var ns *codehex.NSError
	if errors.As(err, &ns) {
		return classify(ns.Domain, ns.Code, ns.LocalizedDescription, err)
	}
	return err
}

// configuration builds the VM from its bundle: Mac platform and boot
// loader, virtio block disk, NAT or no network, virtio-vsock, the shared
// folder as the VirtioFS automount share "hivecrew", a Mac display at one
// pixel per point, keyboard and pointing device.
func (m *Machine) configuration() (*codehex.VirtualMachineConfiguration, error) {
	b := m.bundle
	hwData, err := os.ReadFile(b.HardwareModel())
	if err != nil {
		return nil, err
	}
	hw, err := codehex.NewMacHardwareModelWithData(hwData)
	if err != nil {
		return nil, nsError(err)
	}
	if !hw.Supported() {
		return nil, errdefs.Unsupportedf("this Mac cannot run the hardware model of template %s", m.cfg.TemplateID)
	}
	midData, err := os.ReadFile(b.MachineID())
	if err != nil {
		return nil, err
	}
	mid, err := codehex.NewMacMachineIdentifierWithData(midData)
	if err != nil {
		return nil, nsError(err)
	}
	aux, err := codehex.NewMacAuxiliaryStorage(b.AuxStorage())
	if err != nil {
		return nil, nsError(err)
	}
	platform, err := codehex.NewMacPlatformConfiguration(
		codehex.WithMacAuxiliaryStorage(aux), codehex.WithMacHardwareModel(hw), codehex.WithMacMachineIdentifier(mid))
	if err != nil {
		return nil, nsError(err)
	}
	boot, err := codehex.NewMacOSBootLoader()
	if err != nil {
		return nil, nsError(err)
	}
	c, err := codehex.NewVirtualMachineConfiguration(boot, uint(m.cfg.CPUs), uint64(m.cfg.MemoryMB)<<20)
	if err != nil {
		return nil, nsError(err)
	}
	c.SetPlatformVirtualMachineConfiguration(platform)

	disk, err := codehex.NewDiskImageStorageDeviceAttachment(b.Disk(), false)
	if err != nil {
		return nil, nsError(err)
	}
	block, err := codehex.NewVirtioBlockDeviceConfiguration(disk)
	if err != nil {
		return nil, nsError(err)
	}
	c.SetStorageDevicesVirtualMachineConfiguration([]codehex.StorageDeviceConfiguration{block})

	if m.cfg.Network == vm.NetworkInternet {
		nat, err := codehex.NewNATNetworkDeviceAttachment()
		if err != nil {
			return nil, nsError(err)
		}
		nic, err := codehex.NewVirtioNetworkDeviceConfiguration(nat)
		if err != nil {
			return nil, nsError(err)
		}
		// The VM's own MAC, kept in config.json (a restore needs the same
		// configuration; a new MAC per boot used up NAT DHCP leases).
		hw, err := net.ParseMAC(m.cfg.MACAddress)
		if err != nil {
			return nil, errdefs.Invalidf("VM %s has no valid MAC address in config.json: %v", m.spec.ID, err)
		}
		mac, err := codehex.NewMACAddress(hw)
		if err != nil {
			return nil, nsError(err)
		}
		nic.SetMACAddress(mac)
		c.SetNetworkDevicesVirtualMachineConfiguration([]*codehex.VirtioNetworkDeviceConfiguration{nic})
	}

	sock, err := codehex.NewVirtioSocketDeviceConfiguration()
	if err != nil {
		return nil, nsError(err)
	}
	c.SetSocketDevicesVirtualMachineConfiguration([]codehex.SocketDeviceConfiguration{sock})

	dir, err := codehex.NewSharedDirectory(m.spec.SharedDir(), false)
	if err != nil {
		return nil, nsError(err)
	}
	share, err := codehex.NewMultipleDirectoryShare(map[string]*codehex.SharedDirectory{"hivecrew": dir})
	if err != nil {
		return nil, nsError(err)
	}
	tag, err := codehex.MacOSGuestAutomountTag()
	if err != nil {
		return nil, nsError(err)
	}
	fs, err := codehex.NewVirtioFileSystemDeviceConfiguration(tag)
	if err != nil {
		return nil, nsError(err)
	}
	fs.SetDirectoryShare(share)
	c.SetDirectorySharingDevicesVirtualMachineConfiguration([]codehex.DirectorySharingDeviceConfiguration{fs})

	gfx, err := codehex.NewMacGraphicsDeviceConfiguration()
	if err != nil {
		return nil, nsError(err)
	}
	display, err := codehex.NewMacGraphicsDisplayConfiguration(int64(m.cfg.DisplayWidth), int64(m.cfg.DisplayHeight), 110)
	if err != nil {
		return nil, nsError(err)
	}
	gfx.SetDisplays(display)
	c.SetGraphicsDevicesVirtualMachineConfiguration([]codehex.GraphicsDeviceConfiguration{gfx})

	// Mac keyboard and trackpad where the host has them: a saved state
	// cannot be taken or restored with USB input devices.
	kbName, pointerNames := inputDevices(hostMacOSMajor())
	var kb codehex.KeyboardConfiguration
	if kbName == devMacKeyboard {
		kb, err = codehex.NewMacKeyboardConfiguration()
	} else {
		kb, err = codehex.NewUSBKeyboardConfiguration()
	}
	if err != nil {
		return nil, nsError(err)
	}
	c.SetKeyboardsVirtualMachineConfiguration([]codehex.KeyboardConfiguration{kb})
	var pointers []codehex.PointingDeviceConfiguration
	for _, name := range pointerNames {
		var p codehex.PointingDeviceConfiguration
		if name == devMacTrackpad {
			p, err = codehex.NewMacTrackpadConfiguration()
		} else {
			p, err = codehex.NewUSBScreenCoordinatePointingDeviceConfiguration()
		}
		if err != nil {
			return nil, nsError(err)
		}
		pointers = append(pointers, p)
	}
	c.SetPointingDevicesVirtualMachineConfiguration(pointers)

	if ok, err := c.Validate(); !ok || err != nil {
		return nil, errdefs.Invalidf("VM %s configuration: %v", m.spec.ID, nsError(err))
	}
	return c, nil
}

// hostMacOSMajor is this Mac's macOS major version (kern.osproductversion).
func hostMacOSMajor() int {
	v, err := unix.Sysctl("kern.osproductversion")
	if err != nil {
		return 0
	}
	return majorVersion(v)
}

// Start implements vm.Machine.
func (m *Machine) Start(ctx context.Context) error {
	return m.boot(ctx, vm.NewGuestKey(), func(v *codehex.VirtualMachine) error { return v.Start() })
}

// GuestKey implements vm.Machine. A macOS guest has no channel to its
// agent before the agent runs, so the host enrolls the key in the first
// hello of the boot (enroll), before any task's code has run in the guest.
func (m *Machine) GuestKey() ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.key, true
}

// keyFile is where Save keeps the boot key of a saved state: the restored
// guest agent still holds it.
func keyFile(statePath string) string { return statePath + ".key" }

// boot creates the VM object and starts it with start (Start, or a restore
// followed by Resume), then supervises it.
func (m *Machine) boot(ctx context.Context, key []byte, start func(*codehex.VirtualMachine) error) error {
	ctx, end, err := m.boots.Begin(ctx, m.spec.ID)
	if err != nil {
		return err
	}
	defer end()
	m.mu.Lock()
	if m.status.State == vm.StateRunning || m.status.State == vm.StateStarting {
		m.mu.Unlock()
		return nil
	}
	m.status.State = vm.StateStarting
	m.mu.Unlock()
	fail := func(err error) error {
		m.mu.Lock()
		m.status = vm.Status{State: vm.StateError, Reason: err.Error(), Limits: m.status.Limits}
		m.mu.Unlock()
		return fmt.Errorf("start VM %s: %w", m.spec.ID, err)
	}
	config, err := m.configuration()
	if err != nil {
		return fail(err)
	}
	v, err := codehex.NewVirtualMachine(config)
	if err != nil {
		return fail(nsError(err))
	}
	if err := start(v); err != nil {
		return fail(nsError(err))
	}
	states := v.StateChangedNotify()
	for v.State() != codehex.VirtualMachineStateRunning {
		select {
		case st := <-states:
			if st == codehex.VirtualMachineStateError || st == codehex.VirtualMachineStateStopped {
				return fail(errors.New("the VM stopped while starting"))
			}
		case <-ctx.Done():
			v.Stop()
			return fail(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	exited := make(chan struct{})
	m.mu.Lock()
	m.v, m.exited, m.stopping, m.key = v, exited, false, key
	m.status.State, m.status.Reason = vm.StateRunning, ""
	m.mu.Unlock()
	go m.supervise(v, states, exited)
	return nil
}

// supervise records how the run ends.
func (m *Machine) supervise(v *codehex.VirtualMachine, states <-chan codehex.VirtualMachineState, exited chan struct{}) {
	for st := range states {
		if st != codehex.VirtualMachineStateStopped && st != codehex.VirtualMachineStateError {
			continue
		}
		m.mu.Lock()
		switch {
		case m.stopping:
			m.status.State, m.status.Reason = vm.StateStopped, "stopped"
		case st == codehex.VirtualMachineStateError:
			m.status.State, m.status.Reason = vm.StateError, "the Virtualization framework reported an error"
		default:
			m.status.State, m.status.Reason = vm.StateError, "the guest shut down"
		}
		m.v = nil
		m.mu.Unlock()
		close(exited)
		return
	}
}

// Stop implements vm.Machine: ask the guest to shut down (RequestStop:
// the power button, which a macOS guest answers with a "shut down?"
// dialog), wait up to the grace period, then stop it by force. Task
// clones are halted instead (Halt, vm.Discard), and templates shut down
// through their guest agent first (vm.StopAs, vm.Keep): this is the
// fallback.
func (m *Machine) Stop(ctx context.Context) error {
	v, exited, err := m.beginStop(ctx)
	if err != nil || v == nil {
		return err
	}
	if v.CanRequestStop() {
		if _, err := v.RequestStop(); err != nil {
			m.b.opts.Log.Warn("request stop", "vm", m.spec.ID, "err", err)
		}
		if vm.WaitExit(ctx, exited, m.b.opts.StopGrace) {
			return nil
		}
	}
	return m.forceStop(v, exited)
}

// Halt implements vm.Halter: the power is cut at once (the framework's
// destructive stop), for a VM whose disk is thrown away next.
func (m *Machine) Halt(ctx context.Context) error {
	v, exited, err := m.beginStop(ctx)
	if err != nil || v == nil {
		return err
	}
	return m.forceStop(v, exited)
}

// ShutsDownFromGuest implements vm.GuestShutdowner: a macOS guest shuts
// down cleanly only when asked from inside (the guest agent's shutdown).
func (m *Machine) ShutsDownFromGuest() bool { return true }

// beginStop ends a boot in progress and marks a running VM as stopping;
// v is nil when it is not running.
func (m *Machine) beginStop(ctx context.Context) (*codehex.VirtualMachine, chan struct{}, error) {
	// A boot in progress ends; if it got through, the VM is stopped below.
	if err := m.boots.Abort(ctx); err != nil {
		return nil, nil, fmt.Errorf("stop VM %s: %w", m.spec.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.v == nil {
		return nil, nil, nil
	}
	m.stopping = true
	m.status.State = vm.StateStopping
	return m.v, m.exited, nil
}

// forceStop stops v by force and waits for the run to end.
func (m *Machine) forceStop(v *codehex.VirtualMachine, exited chan struct{}) error {
	select {
	case <-exited:
		return nil
	default:
	}
	if v.CanStop() {
		if err := v.Stop(); err != nil {
			return fmt.Errorf("stop VM %s: %w", m.spec.ID, nsError(err))
		}
	}
	select {
	case <-exited:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("stop VM %s: still running 30 s after a forced stop", m.spec.ID)
	}
}

// Delete implements vm.Machine.
func (m *Machine) Delete(ctx context.Context) error {
	// Its disk goes next: no shutdown to wait for.
	halt := func(ctx context.Context) error {
		m.closeDisplay()
		return m.Halt(ctx)
	}
	return vm.DeleteMachine(ctx, &m.boots, "VM "+m.spec.ID, halt, nil, m.spec.Dir)
}

// DialGuest implements vm.Machine through the VM's virtio socket device.
func (m *Machine) DialGuest(ctx context.Context) (net.Conn, error) {
	m.mu.Lock()
	v := m.v
	m.mu.Unlock()
	if v == nil {
		return nil, vm.ErrNotRunning
	}
	devs := v.SocketDevices()
	if len(devs) == 0 {
		return nil, errdefs.Unavailablef("VM %s has no socket device", m.spec.ID)
	}
	// Not devs[0].Connect: vz v3.7.1 closes the connection's descriptor,
	// which the connection closes again (vsock.go, adoptDescriptor).
	conn, err := dialVsock(ctx, devs[0], m.b.opts.GuestPort)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, errdefs.Unavailablef("connect to the guest agent of %s on vsock port %d: %v", m.spec.ID, m.b.opts.GuestPort, err)
	}
	return conn, nil
}

// Save implements vm.SaveRestorer: pause, save the machine state to path,
// then stop (macOS 14 or later, and only where the configuration allows).
func (m *Machine) Save(ctx context.Context, path string) error {
	m.mu.Lock()
	v := m.v
	m.mu.Unlock()
	if v == nil {
		return vm.ErrNotRunning
	}
	config, err := m.configuration()
	if err != nil {
		return err
	}
	if ok, err := config.ValidateSaveRestoreSupport(); !ok || err != nil {
		return errdefs.Unsupportedf("VM %s cannot be saved: %v", m.spec.ID, nsError(err))
	}
	if err := v.Pause(); err != nil {
		return fmt.Errorf("pause VM %s: %w", m.spec.ID, nsError(err))
	}
	if err := v.SaveMachineStateToPath(path); err != nil {
		v.Resume()
		return fmt.Errorf("save VM %s: %w", m.spec.ID, nsError(err))
	}
	m.mu.Lock()
	key := m.key
	m.mu.Unlock()
	if err := os.WriteFile(keyFile(path), key, 0o600); err != nil {
		v.Resume()
		return fmt.Errorf("save VM %s: the boot key: %w", m.spec.ID, err)
	}
	// The state is saved and the VM paused: it must not run on (the disk
	// would move past the saved state), so it is halted, not shut down.
	return m.Halt(ctx)
}

// Restore implements vm.SaveRestorer: start the VM from a saved state.
func (m *Machine) Restore(ctx context.Context, path string) error {
	key, err := os.ReadFile(keyFile(path))
	if err != nil || len(key) != protocol.KeyBytes {
		return fmt.Errorf("restore VM %s: the saved state has no boot key (%v)", m.spec.ID, err)
	}
	return m.boot(ctx, key, func(v *codehex.VirtualMachine) error {
		if err := v.RestoreMachineStateFromURL(path); err != nil {
			return err
		}
		return v.Resume()
	})
}
