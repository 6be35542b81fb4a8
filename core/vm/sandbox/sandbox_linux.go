package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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
	return &Backend{cfg: cfg, id: id}, nil
}

// Capabilities implements vm.Backend.
func (b *Backend) Capabilities() vm.Capabilities {
	c := vm.Capabilities{Name: "sandbox", GuestOS: "linux", Kinds: []vm.TemplateKind{vm.KindHost}, Networks: []vm.NetworkMode{vm.NetworkOffline},
		SharedCPUs: true, SharedMemory: true}
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

// Start implements vm.Machine.
func (m *Machine) Start(ctx context.Context) error {
	ctx, end, err := m.starts.Begin(ctx, m.spec.ID)
	if err != nil {
		return err
	}
	defer end()
	m.mu.Lock()
	switch m.status.State {
	case vm.StateRunning:
		m.mu.Unlock()
		return nil
	case vm.StateStarting, vm.StateStopping:
		m.mu.Unlock()
		return errdefs.Conflictf("machine %s is %s", m.spec.ID, m.status.State)
	}
	m.status = vm.Status{State: vm.StateStarting}
	m.mu.Unlock()
	if err := m.start(ctx); err != nil {
		m.mu.Lock()
		m.status = vm.Status{State: vm.StateError, Reason: err.Error()}
		m.mu.Unlock()
		return fmt.Errorf("start sandbox %s: %w", m.spec.ID, err)
	}
	return nil
}

// memfd returns a sealed-by-convention in-memory file holding data.
func memfd(name, data string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (m *Machine) start(ctx context.Context) (err error) {
	var cleanups []func() error // run on failure, last first
	defer func() {
		if err != nil {
			for i := len(cleanups) - 1; i >= 0; i-- {
				err = errors.Join(err, cleanups[i]())
			}
		}
	}()
	// Files put into the shared folder by the host become the guest's.
	if err := m.id.own(m.path("shared")); err != nil {
		return err
	}
	os.Remove(m.path("run", "agent.sock"))

	src, unstage, err := m.stage()
	if err != nil {
		return err
	}
	cleanups = append(cleanups, unstage)

	var files []*os.File
	closeFiles := func() {
		for _, f := range files {
			f.Close()
		}
	}
	defer closeFiles()
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer infoR.Close()
	files = append(files, infoW)
	for _, d := range []struct{ name, data string }{{"passwd", passwd()}, {"group", group()}, {"resolv.conf", resolvConf}, {"machine-id", machineID()}, {"hosts", hostsFile}} {
		f, err := memfd(d.name, d.data)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	key := vm.NewGuestKey()
	keyR, err := keyPipe(key)
	if err != nil {
		return err
	}
	files = append(files, keyR)
	if len(files) != fdKey-2 {
		return fmt.Errorf("sandbox: the boot key would be descriptor %d, not %d", len(files)+2, fdKey)
	}

	lim, err := prepareLimits(m.b.cfg.CgroupRoot, m.spec.ID, m.spec.MemoryMB, m.spec.CPUs, m.b.cfg.MaxProcs, m.id)
	if err != nil {
		return err
	}
	if lim.cleanup != nil {
		cleanups = append(cleanups, lim.cleanup)
	}
	var root []RootEntry
	if m.spec.Template.Kind == vm.KindHost {
		if root, err = hostRoot(); err != nil {
			return err
		}
	}
	args := bwrapArgs(launch{
		ID: m.spec.ID, Kind: m.spec.Template.Kind, Network: m.spec.Network, RootEntries: root,
		Home: src.home, Shared: src.shared, Run: src.run, Agent: src.agent, Root: src.root,
		Mask: []string{m.b.cfg.DataDir}, DisplayWidth: m.spec.DisplayWidth, DisplayHeight: m.spec.DisplayHeight,
		LogLevel: m.b.cfg.AgentLogLevel, CPUs: m.spec.CPUs,
	})
	// The options name the VM and its staged folders: they go to
	// bubblewrap through a descriptor, not its command line, which every
	// local user can read in ps. The command after "--" (the guest agent,
	// which names neither) stays on the command line: bubblewrap reads no
	// command from an --args file.
	sep := slices.Index(args, "--")
	if sep < 0 {
		return errors.New("sandbox: bubblewrap's arguments have no command")
	}
	argsFile, err := memfd("bwrap-args", strings.Join(args[:sep], "\x00")+"\x00")
	if err != nil {
		return err
	}
	files = append(files, argsFile)
	if len(files) != fdArgs-2 {
		return fmt.Errorf("sandbox: bubblewrap's arguments would be descriptor %d, not %d", len(files)+2, fdArgs)
	}
	argv := append(append([]string{}, lim.wrap...), "bwrap", "--args", strconv.Itoa(fdArgs))
	argv = append(argv, args[sep:]...)
	var g *gate
	if lim.needsGate() {
		if g, err = newGate(); err != nil {
			return err
		}
		defer g.close()
		argv = g.wrap(argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Path, _ = exec.LookPath(argv[0])
	if g != nil {
		cmd.Stdin = g.r
	}
	cmd.ExtraFiles = files
	// HIVECREW_VM names the VM to root and the sandbox account (a process's
	// environment is readable by them alone), for tools and tests that find
	// a VM's processes; bubblewrap clears it for the guest.
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HIVECREW_VM=" + m.spec.ID}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: m.id.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if lim.cgroup != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(lim.cgroup.Fd())
	}
	logf, err := os.OpenFile(m.path("agent.log"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start bwrap: %w", err)
	}
	closeFiles()
	files = nil
	g.started()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	cleanups = append(cleanups, func() error {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		return nil
	})
	if err := lim.join(cmd.Process.Pid); err != nil {
		return err
	}
	if err := g.open(); err != nil {
		return fmt.Errorf("start the sandbox: %w", err)
	}

	pid, err := readChildPID(infoR, waited)
	if err != nil {
		return fmt.Errorf("%w%s", err, m.logTail())
	}
	if err := m.waitReady(ctx, waited); err != nil {
		return err
	}
	// NAT is attached once the sandbox is fully set up (its guest answers):
	// earlier, its user namespace may not be ready to be joined.
	var net *slirp
	if m.spec.Network == vm.NetworkInternet {
		if net, err = startSlirp(pid, m.id, append(slices.Clone(m.b.cfg.AllowHosts), m.spec.AllowHosts...)); err != nil {
			return err
		}
		cleanups = append(cleanups, func() error { net.stop(); return nil })
	}
	exited := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.childPID, m.exited, m.stopping, m.key = cmd, pid, exited, false, key
	lim.what.Disk = m.disk
	m.status = vm.Status{State: vm.StateRunning, Limits: lim.what}
	m.mu.Unlock()
	// From here on the run is supervised: its end is recorded and cleaned up.
	cleanups = nil
	go m.supervise(waited, exited, net, lim, unstage)
	return nil
}

// keyPipe returns the read end of a pipe holding key, its write end
// closed: the guest agent reads the key to EOF and closes it, and what any
// other holder of the descriptor could read is then nothing. (bubblewrap
// passes it to the agent and closes it in the sandbox's PID 1.)
func keyPipe(key []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(key) // 32 bytes: within the pipe's buffer
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("boot key pipe: %w", err)
	}
	return r, nil
}

// readChildPID reads bwrap's info (the sandbox's PID 1 as the host sees it).
func readChildPID(r io.Reader, waited <-chan error) (int, error) {
	type info struct {
		ChildPID int `json:"child-pid"`
	}
	got := make(chan info, 1)
	go func() {
		var i info
		json.NewDecoder(bufio.NewReader(r)).Decode(&i)
		got <- i
	}()
	select {
	case i := <-got:
		if i.ChildPID <= 0 {
			return 0, errors.New("bubblewrap failed to set up the sandbox")
		}
		return i.ChildPID, nil
	case err := <-waited:
		return 0, fmt.Errorf("bubblewrap exited: %v", err)
	case <-time.After(30 * time.Second):
		return 0, errors.New("bubblewrap did not set up the sandbox within 30 s")
	}
}

// waitReady waits until the guest agent accepts connections.
func (m *Machine) waitReady(ctx context.Context, waited chan error) error {
	ctx, cancel := context.WithTimeout(ctx, m.b.cfg.ReadyTimeout)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if c, err := net.Dial("unix", m.path("run", "agent.sock")); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-waited:
			waited <- err // leave it for the cleanup
			return fmt.Errorf("the sandbox exited before its guest agent was ready (%v)%s", err, m.logTail())
		case <-ctx.Done():
			return fmt.Errorf("the guest agent was not ready: %w%s", ctx.Err(), m.logTail())
		case <-t.C:
		}
	}
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
