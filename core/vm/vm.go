// Package vm is the contract between Hivecrew and the machines agents run in.
// It compiles on every OS and imports no virtualization library: backends
// (vm/sandbox on Linux, vm/vz on macOS, vm/fake for tests) live in
// subpackages and run the shared conformance suite in vm/vmtest.
//
// Lifecycle: Backend.Create clones a template into a new machine (stopped);
// Start boots it and returns once its guest agent accepts connections;
// Stop shuts it down (gracefully, then by force) and may be followed by
// Start again; Delete stops it if needed and removes everything it owns.
// Stop and Delete are idempotent. A machine that stops by itself (crash,
// kill, guest shutdown) closes the channel Exited returned for that run and
// reports why in State. Machines are safe for concurrent use.
package vm

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// TemplateKind says what a template is.
type TemplateKind string

// Template kinds.
const (
	// KindHost runs the host's own root filesystem read-only (sandbox).
	KindHost TemplateKind = "host"
	// KindRootFS is a root filesystem directory, cloned as an overlay (sandbox).
	KindRootFS TemplateKind = "rootfs"
	// KindMacOS is a macOS VM bundle: disk, auxiliary storage, hardware model (vz).
	KindMacOS TemplateKind = "macos"
)

// Template is what machines are cloned from.
type Template struct {
	ID   string
	Kind TemplateKind
	// Path is the template's folder or root filesystem; empty for KindHost.
	Path string
}

// NetworkMode is what network a machine gets.
type NetworkMode string

// Network modes.
const (
	NetworkOffline  NetworkMode = "offline"
	NetworkInternet NetworkMode = "internet"
)

// Spec describes a machine to create. ID, Template and Dir are required.
type Spec struct {
	ID       string
	Name     string
	Template Template
	// Dir is the machine's own folder; the backend keeps its state there
	// and the shared folder at Dir/shared.
	Dir      string
	CPUs     int
	MemoryMB int
	DiskGB   int
	// AllowHosts are host names, addresses or CIDRs an internet-mode
	// machine may reach past its backend's egress policy.
	AllowHosts []string
	Network    NetworkMode
	// Display is the guest screen in logical points (default 1280x800).
	DisplayWidth, DisplayHeight int
}

// SharedDir is the host side of the machine's shared folder (inbox/,
// outbox/, workspace/).
func (s Spec) SharedDir() string { return s.Dir + "/shared" }

// State is a machine's lifecycle state as its backend sees it.
type State string

// Machine states.
const (
	StateStopped  State = "stopped"
	StateStarting State = "starting"
	StateRunning  State = "running"
	StateStopping State = "stopping"
	StateError    State = "error"
)

// Status is a machine's state and, after an unplanned stop or a failure,
// why.
type Status struct {
	State State
	// Reason explains StateError, or how the last run ended.
	Reason string
	// Limits says how the machine's resources are capped.
	Limits Limits
}

// Limits says, per resource, what caps a machine on its host: the
// mechanism and the cap ("cgroup v1 memory.limit_in_bytes 4096 MB"). An
// empty field is not capped: the machine shares the host's.
type Limits struct {
	// Processes caps how many processes (tasks) the machine runs.
	Processes string `json:"processes,omitempty"`
	// Memory caps the machine's memory, all its processes together or each.
	Memory string `json:"memory,omitempty"`
	// CPU caps the machine's CPU time.
	CPU string `json:"cpu,omitempty"`
	// Disk caps what the machine writes (home, shared folder, clone).
	Disk string `json:"disk,omitempty"`
	// UID is the host account the machine runs as (one of its own or shared).
	UID string `json:"uid,omitempty"`
}

// String gives the limits on one line, "processes: ...; memory: ...".
func (l Limits) String() string {
	var parts []string
	for _, f := range [][2]string{{"processes", l.Processes}, {"memory", l.Memory}, {"cpu", l.CPU}, {"disk", l.Disk}, {"uid", l.UID}} {
		if f[1] != "" {
			parts = append(parts, f[0]+": "+f[1])
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// Capabilities describe a backend.
type Capabilities struct {
	// Name is the backend's name ("sandbox", "vz", "fake").
	Name string
	// GuestOS is "linux" or "macos".
	GuestOS string
	// Kinds are the template kinds the backend can clone.
	Kinds []TemplateKind
	// Networks are the network modes it supports.
	Networks []NetworkMode
	// MaxRunning is a host limit on running machines (2 for macOS guests);
	// 0 means none beyond the user's settings.
	MaxRunning int
	// SharedCPUs says a machine's CPU count is only a cap on the host's
	// CPUs, which every machine shares (a sandbox's CPU quota), not vCPUs
	// it holds: admission does not count them against the host's cores.
	SharedCPUs bool
	// SharedMemory says a machine's memory size is only a cap (a cgroup
	// limit) on what it may use of the host's memory, not memory it holds:
	// admission lets the caps together overcommit the host (4×) and checks
	// what the host has available.
	SharedMemory bool
	// MemoryCapped says the backend also caps what all its machines use
	// together, below the host's memory less admission's reserve (a limit
	// on their parent cgroup): however much they grow, the host keeps its
	// reserve, and what runs out is a machine (its OOM killer picks in the
	// machines' group), never a host program. Admission then counts what
	// the host really has available, not the machines' caps.
	MemoryCapped bool
	// SaveRestore says machines implement SaveRestorer.
	SaveRestore bool
	// Display says machines implement Displayer.
	Display bool
}

// ReserveMB is the memory, of a host with hostMB, that machines sharing
// its memory leave to the rest of it: admission waits while less is
// available, and a backend whose machines are MemoryCapped caps them at
// hostMB less this.
func ReserveMB(hostMB int) int { return max(1024, hostMB/10) }

// Backend creates machines.
type Backend interface {
	Capabilities() Capabilities
	// Create clones spec.Template into a new, stopped machine.
	Create(ctx context.Context, spec Spec) (Machine, error)
	// Load reopens a machine created earlier (after a helper restart); it
	// is stopped.
	Load(ctx context.Context, spec Spec) (Machine, error)
}

// Machine is one VM or sandbox.
type Machine interface {
	Spec() Spec
	Status() Status
	// Start boots the machine and returns once its guest agent accepts
	// connections.
	Start(ctx context.Context) error
	// Exited is closed when the current (or last) run ends.
	Exited() <-chan struct{}
	// Stop shuts the machine down: gracefully, then by force when ctx ends
	// or the backend's grace period passes.
	Stop(ctx context.Context) error
	// Delete stops the machine and removes everything it owns.
	Delete(ctx context.Context) error
	// DialGuest connects to the guest agent.
	DialGuest(ctx context.Context) (net.Conn, error)
	// GuestKey returns the secret of the current boot (NewGuestKey; nil
	// when the machine has not started) that the guest agent proves at
	// every hello (guestagent/protocol/PROTOCOL.md). It reaches only the
	// guest agent: sandboxes pass it on an inherited descriptor. enroll
	// says the backend has no such channel (macOS guests): the host hands
	// the key over in the first hello of the boot instead.
	GuestKey() (key []byte, enroll bool)
}

// NewGuestKey returns a fresh random boot key.
func NewGuestKey() []byte {
	k := make([]byte, protocol.KeyBytes)
	rand.Read(k) // never fails (crypto/rand panics rather than return short)
	return k
}

// SaveRestorer is implemented by machines whose running state can be saved
// and restored (macOS 14+ guests), for a fast warm pool.
type SaveRestorer interface {
	Save(ctx context.Context, path string) error
	Restore(ctx context.Context, path string) error
}

// Displayer is implemented by machines that can show their screen in a
// native window for the user to take over. ShowDisplay opens (or brings
// forward) the window; closed is called once when the user closes it.
// Closing the window never stops the machine.
type Displayer interface {
	ShowDisplay(ctx context.Context, closed func()) error
	// HideDisplay closes the window if it is open (the user handed the VM
	// back elsewhere); closed is then called as if the user closed it.
	HideDisplay()
}

// Consoler is implemented by machines whose own screen, keyboard and
// pointer can be reached before any guest agent runs (a macOS VM's
// console, for an unattended Setup Assistant). OpenConsole starts an RFB
// (VNC) server for the running machine at addr (host:port) with password;
// close stops it.
type Consoler interface {
	OpenConsole(ctx context.Context) (addr, password string, close func(), err error)
}

// ErrHostLimit is returned by Start when the host refuses another running
// machine (macOS allows two macOS guests). It is of class unavailable.
var ErrHostLimit = errdefs.Unavailablef("host VM limit reached")

// IsHostLimit reports whether err is the host's VM limit.
func IsHostLimit(err error) bool { return errors.Is(err, ErrHostLimit) }

// ErrNotRunning is returned by DialGuest on a machine that is not running.
var ErrNotRunning = errdefs.Conflictf("machine is not running")
