package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Config configures the backend. AgentBinary and Log are required.
type Config struct {
	// AgentBinary is the host's hivecrew-guestagent, bound into every
	// sandbox so that guest and host always match.
	AgentBinary string
	// DataDir is the Hivecrew data directory, masked inside sandboxes.
	DataDir string
	// Account is the account sandboxes run as when the helper is root;
	// default "hivecrew-sandbox".
	Account string
	// StopGrace is how long Stop waits for the guest to exit before killing
	// it; default 5 s.
	StopGrace time.Duration
	// ReadyTimeout bounds Start's wait for the guest agent; default 60 s.
	ReadyTimeout time.Duration
	// CgroupRoot is the cgroup v2 mount; default /sys/fs/cgroup.
	CgroupRoot string
	// Group is the cgroup that holds every machine's and caps them all
	// together: below the helper's own on cgroup v1, at the root on v2;
	// default "hivecrew". Two backends that share a cgroup and run at
	// once need groups of their own (each caps its machines at
	// MemoryMB).
	Group string
	// MemoryMB caps all machines' memory together; default the host's
	// memory less admission's reserve (vm.ReserveMB).
	MemoryMB int
	// MaxProcs caps each machine's processes (threads included); default
	// 1024.
	MaxProcs int
	// AgentLogLevel is the guest agent's log level; default info.
	AgentLogLevel string
	// AllowHosts are host names or CIDRs internet-mode guests may reach
	// although the egress policy refuses them otherwise (private ranges,
	// the host's own addresses); names are resolved at each VM's start.
	AllowHosts []string
	Log        *slog.Logger
}

// Backend runs machines as bubblewrap sandboxes.
type Backend struct {
	cfg Config
	id  identity
	// boost weighs the machines' cgroups up while they start.
	boost startBoost
	// memoryCapped says all machines' memory is capped together
	// (memcap_linux.go).
	memoryCapped bool
}

var _ vm.Backend = (*Backend)(nil)

// New checks what the backend needs (bubblewrap, the agent binary, the
// sandbox account) and returns it.
func New(cfg Config) (*Backend, error) {
	if cfg.Log == nil || cfg.AgentBinary == "" {
		return nil, errors.New("sandbox backend: AgentBinary and Log are required")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		return nil, errdefs.Unsupportedf("the sandbox backend needs bubblewrap (bwrap); run make deps")
	}
	if fi, err := os.Stat(cfg.AgentBinary); err != nil || fi.Mode()&0o001 == 0 {
		return nil, fmt.Errorf("guest agent binary %s is missing or not executable by others (build it with make build)", cfg.AgentBinary)
	}
	if cfg.Account == "" {
		cfg.Account = "hivecrew-sandbox"
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 5 * time.Second
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = cgroupRoot
	}
	if cfg.Group == "" {
		cfg.Group = defaultGroup
	}
	if cfg.MemoryMB == 0 {
		host := vm.HostMemoryMB()
		cfg.MemoryMB = host - vm.ReserveMB(host)
	}
	if cfg.AgentLogLevel == "" {
		cfg.AgentLogLevel = "info"
	}
	id, err := sandboxIdentity(cfg.Account)
	if err != nil {
		return nil, err
	}
	if changed, err := grantTun(id); err != nil {
		cfg.Log.Warn("cannot give the sandbox account access to "+tunDevice+"; internet mode will fail", "err", err)
	} else if changed {
		cfg.Log.Info("gave the sandbox account's group access to "+tunDevice+" (0660) for internet mode", "account", id.name)
	}
	b := &Backend{cfg: cfg, id: id}
	if err := capMachinesMemory(cfg.CgroupRoot, cfg.Group, cfg.MemoryMB); err != nil {
		cfg.Log.Warn("machines' memory not capped together: admission counts their caps", "err", err)
	} else {
		b.memoryCapped = true
	}
	return b, nil
}

// Capabilities implements vm.Backend.
func (b *Backend) Capabilities() vm.Capabilities {
	c := vm.Capabilities{Name: "sandbox", GuestOS: "linux", Kinds: []vm.TemplateKind{vm.KindHost}, Networks: []vm.NetworkMode{vm.NetworkOffline},
		SharedCPUs: true, SharedMemory: true, MemoryCapped: b.memoryCapped}
	if os.Geteuid() == 0 {
		c.Kinds = append(c.Kinds, vm.KindRootFS)
	}
	if _, err := exec.LookPath("slirp4netns"); err == nil {
		c.Networks = append(c.Networks, vm.NetworkInternet)
	}
	return c
}

// Account is the host account sandboxes run as.
func (b *Backend) Account() (name string, uid int) { return b.id.name, b.id.uid }

// Create implements vm.Backend.
func (b *Backend) Create(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	if spec.ID == "" || !filepath.IsAbs(spec.Dir) {
		return nil, errdefs.Invalidf("a machine needs an id and an absolute folder")
	}
	if _, err := os.Stat(spec.Dir); err == nil {
		return nil, errdefs.Conflictf("machine folder %s already exists", spec.Dir)
	}
	if err := b.check(spec); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		return nil, err
	}
	return b.Load(ctx, spec)
}

func (b *Backend) check(spec vm.Spec) error {
	caps := b.Capabilities()
	switch spec.Template.Kind {
	case vm.KindHost:
	case vm.KindRootFS:
		if os.Geteuid() != 0 {
			return errdefs.Unsupportedf("rootfs templates need the helper to run as root (it mounts the overlay clone)")
		}
		if fi, err := os.Stat(spec.Template.Path); err != nil || !fi.IsDir() {
			return errdefs.NotFoundf("template root filesystem %s not found", spec.Template.Path)
		}
	default:
		return errdefs.Unsupportedf("the sandbox backend cannot run %q templates", spec.Template.Kind)
	}
	if spec.Network == vm.NetworkInternet && len(caps.Networks) < 2 {
		return errdefs.Unsupportedf("internet mode needs slirp4netns (run make deps)")
	}
	return nil
}

// Load implements vm.Backend: the machine's folders are (re)made and a
// mount left by a crashed helper is undone.
func (b *Backend) Load(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	if err := b.check(spec); err != nil {
		return nil, err
	}
	if spec.DisplayWidth == 0 {
		spec.DisplayWidth, spec.DisplayHeight = 1280, 800
	}
	if spec.MemoryMB == 0 {
		spec.MemoryMB = 4096
	}
	id, release, err := b.machineIdentity(spec.ID)
	if err != nil {
		return nil, err
	}
	release = sync.OnceFunc(release)
	m := &Machine{b: b, spec: spec, id: id, release: release, exited: vm.AlreadyExited(), status: vm.Status{State: vm.StateStopped}}
	loaded := false
	defer func() {
		if !loaded {
			release()
		}
	}()
	// A helper that crashed may have left the staged mounts of this machine.
	if err := unstage(filepath.Join(stageRoot, spec.ID)); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 && spec.DiskGB <= 0 {
		if err := m.unmountDisk(); err != nil { // a disk left by a helper that crashed
			return nil, err
		}
	}
	if os.Geteuid() == 0 && spec.DiskGB > 0 {
		if err := m.mountDisk(spec.DiskGB); err != nil {
			return nil, err
		}
		m.disk = fmt.Sprintf("ext4 image of %d GB (%s)", spec.DiskGB, diskHolds(spec.Template.Kind))
		defer func() {
			if !loaded {
				m.unmountDisk()
			}
		}()
	}
	for _, d := range []string{m.path("shared", protocol.InboxDir), m.path("shared", protocol.OutboxDir), m.path("shared", protocol.WorkspaceDir), m.path("home"), m.path("run")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// The shared folder is given to the account at every Start (the host
	// puts inputs there in between); home and run only here.
	for _, d := range []string{m.path("home"), m.path("run")} {
		if err := id.own(d); err != nil {
			return nil, fmt.Errorf("give %s to the sandbox account: %w", d, err)
		}
	}
	loaded = true
	return m, nil
}

// Machine is one sandbox.
type Machine struct {
	b    *Backend
	spec vm.Spec
	// id is the host account the machine runs as; release gives it back
	// once the machine is deleted.
	id      identity
	release func()

	// starts lets Stop and Delete end a Start in progress.
	starts vm.StartGuard

	// mu guards everything below.
	mu       sync.Mutex
	status   vm.Status
	cmd      *exec.Cmd
	childPID int // the sandbox's PID 1, as the host sees it
	// key is the boot key of the current run (GuestKey).
	key      []byte
	exited   chan struct{}
	stopping bool
	// disk describes the machine's own disk, "" without one (mountDisk).
	disk string
}

var _ vm.Machine = (*Machine)(nil)

func (m *Machine) path(elem ...string) string {
	return filepath.Join(append([]string{m.spec.Dir}, elem...)...)
}

// overlay returns the machine's clone of its template. Its upper layer is
// on the machine's disk, except for a machine whose upper folder an older
// helper made in the machine's folder.
func (m *Machine) overlay() overlay {
	cow := m.spec.Dir
	if _, err := os.Lstat(m.path("upper")); m.disk != "" && err != nil {
		cow = m.path(".disk")
	}
	return newOverlay(cow, m.spec.Template.Path)
}

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

// supervise waits for the run to end, cleans up and records how it ended.
func (m *Machine) supervise(waited chan error, exited chan struct{}, net *slirp, lim limits, unstage func() error) {
	err := <-waited
	if net != nil {
		net.stop()
	}
	capped := lim.events()
	if capped != "" {
		capped = " (" + capped + ")"
	}
	problems := []error{unstage()}
	if lim.cleanup != nil {
		problems = append(problems, lim.cleanup())
	}
	if p := errors.Join(problems...); p != nil {
		m.b.cfg.Log.Warn("sandbox cleanup", "vm", m.spec.ID, "err", p)
	}
	m.mu.Lock()
	if m.stopping {
		m.status = vm.Status{State: vm.StateStopped, Reason: "stopped", Limits: m.status.Limits}
	} else {
		m.status = vm.Status{State: vm.StateError, Reason: fmt.Sprintf("the sandbox exited unexpectedly (%v)%s%s", err, capped, m.logTail()), Limits: m.status.Limits}
	}
	m.cmd, m.childPID = nil, 0
	m.mu.Unlock()
	close(exited)
}

// logTail returns the last problems in the sandbox's log (bubblewrap's
// messages, the agent's warnings and errors), for error messages.
func (m *Machine) logTail() string {
	b, err := os.ReadFile(m.path("agent.log"))
	if err != nil {
		return ""
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.Contains(line, "level=INFO") || strings.Contains(line, "level=DEBUG") {
			continue
		}
		keep = append(keep, line)
	}
	if len(keep) > 5 {
		keep = keep[len(keep)-5:]
	}
	msg := strings.Join(keep, "; ")
	if len(msg) > 800 {
		msg = msg[len(msg)-800:]
	}
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// Stop implements vm.Machine: SIGTERM to the guest agent (its session ends
// with it), then, after the grace period or when ctx ends, SIGKILL to the
// sandbox's PID 1, which takes every process in the sandbox with it.
func (m *Machine) Stop(ctx context.Context) error {
	// A Start in progress undoes what it set up, or leaves a machine that
	// is stopped below.
	if err := m.starts.Abort(ctx); err != nil {
		return fmt.Errorf("stop sandbox %s: %w", m.spec.ID, err)
	}
	m.mu.Lock()
	if m.cmd == nil {
		m.mu.Unlock()
		return nil
	}
	m.stopping = true
	m.status.State = vm.StateStopping
	pid, exited := m.childPID, m.exited
	m.mu.Unlock()

	if agent := firstChild(pid); agent > 0 {
		syscall.Kill(agent, syscall.SIGTERM)
	}
	if vm.WaitExit(ctx, exited, m.b.cfg.StopGrace) {
		return nil
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if vm.WaitExit(context.Background(), exited, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("stop sandbox %s: still running 10 s after SIGKILL", m.spec.ID)
}

// firstChild returns the first child of pid (the guest agent under the
// sandbox's PID 1), or 0.
func firstChild(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// Delete implements vm.Machine.
func (m *Machine) Delete(ctx context.Context) error {
	if err := vm.DeleteMachine(ctx, &m.starts, "sandbox "+m.spec.ID, m.Stop, m.dropDisk, m.spec.Dir); err != nil {
		return err
	}
	// Stop removed the groups of a run of this helper's; those of a run a
	// crashed helper left (this machine Loaded by its successor) go here,
	// with anything still in them.
	if os.Geteuid() == 0 {
		if err := removeLeftoverV1(cgroupRoot, m.b.cfg.Group, m.spec.ID); err != nil {
			return fmt.Errorf("delete sandbox %s: %w", m.spec.ID, err)
		}
	}
	m.release()
	return nil
}

// GuestKey implements vm.Machine: the key of the current run, which only
// its guest agent got (on descriptor fdKey).
func (m *Machine) GuestKey() ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.key, false
}

// DialGuest implements vm.Machine.
func (m *Machine) DialGuest(ctx context.Context) (net.Conn, error) {
	return vm.DialSocket(ctx, m, m.path("run", "agent.sock"))
}

// AgentPID returns the host PID of the running guest agent, or 0.
func (m *Machine) AgentPID() int {
	m.mu.Lock()
	pid := m.childPID
	m.mu.Unlock()
	if pid == 0 {
		return 0
	}
	return firstChild(pid)
}
