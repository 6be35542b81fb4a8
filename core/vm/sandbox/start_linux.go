package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

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
	t0 := time.Now()
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

	lim, err := prepareLimits(m.b.cfg.CgroupRoot, m.b.cfg.Group, m.spec.ID, m.spec.MemoryMB, m.spec.CPUs, m.b.cfg.MaxProcs, m.id)
	if err != nil {
		return err
	}
	if lim.cleanup != nil {
		cleanups = append(cleanups, lim.cleanup)
	}
	// Weighed up beside the host's other programs until the guest answers
	// (see cpuweight_linux.go).
	unboost, berr := m.b.boost.hold(lim.cpuParent())
	if berr != nil {
		m.b.cfg.Log.Warn("sandbox start not weighed up", "vm", m.spec.ID, "err", berr)
	}
	defer unboost()
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
	tFork := time.Now()
	if err := lim.join(cmd.Process.Pid); err != nil {
		return err
	}
	if err := g.open(); err != nil {
		return fmt.Errorf("start the sandbox: %w", err)
	}

	tJoined := time.Now()
	pid, err := readChildPID(infoR, waited)
	if err != nil {
		return fmt.Errorf("%w%s", err, m.logTail())
	}
	tSandbox := time.Now()
	if err := m.waitReady(ctx, waited); err != nil {
		return err
	}
	if err := lim.running(); err != nil {
		m.b.cfg.Log.Warn("sandbox not weighed as running", "vm", m.spec.ID, "err", err)
	}
	// Where a start's time went, for profiling (the benchmark's cold start).
	m.b.cfg.Log.Debug("sandbox start", "vm", m.spec.ID, "prepare", tFork.Sub(t0), "cgroups", tJoined.Sub(tFork),
		"bubblewrap", tSandbox.Sub(tJoined), "desktop", time.Since(tSandbox))
	// NAT is attached once the sandbox is fully set up (its guest answers):
	// earlier, its user namespace may not be ready to be joined.
	var net *slirp
	if m.spec.Network == vm.NetworkInternet {
		if net, err = startSlirp(pid, m.id, append(slices.Clone(m.b.cfg.AllowHosts), m.spec.AllowHosts...), lim.joinCPU); err != nil {
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

// waitReady waits until the guest agent accepts connections. The run
// folder is watched (inotify) for the agent's socket, so the dial follows
// its bind at once; a slow tick stays for what a watch could miss (a
// folder the watch could not be set on, an overflowed queue).
func (m *Machine) waitReady(ctx context.Context, waited chan error) error {
	ctx, cancel := context.WithTimeout(ctx, m.b.cfg.ReadyTimeout)
	defer cancel()
	tick := 10 * time.Millisecond
	created, stopWatch := watchCreate(m.path("run"))
	if created != nil {
		defer stopWatch()
		tick = 100 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	sock := m.path("run", "agent.sock")
	for {
		// A stat until the agent has bound its socket, a dial only then:
		// a hundred dials a second of each booting VM (a socket made,
		// refused and closed each time) cost the helper a fifth of its
		// CPU while 128 sandboxes booted together. A socket bound but not
		// yet listening (the agent's bind and listen are two calls, and a
		// busy machine may run others between them) is dialed again soon:
		// no further event comes, and the slow tick cost such starts
		// 100 ms beside a build.
		var again <-chan time.Time
		if fi, err := os.Lstat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := net.Dial("unix", sock); err == nil {
				c.Close()
				return nil
			}
			again = time.After(listenRetry)
		}
		select {
		case <-again:
		case err := <-waited:
			waited <- err // leave it for the cleanup
			return fmt.Errorf("the sandbox exited before its guest agent was ready (%v)%s", err, m.logTail())
		case <-ctx.Done():
			return fmt.Errorf("the guest agent was not ready: %w%s", ctx.Err(), m.logTail())
		case <-created:
		case <-t.C:
		}
	}
}

// listenRetry is how soon a socket that refused a dial is dialed again.
const listenRetry = 2 * time.Millisecond

// watchCreate returns a channel that receives when an entry is made in
// dir, and the function that stops the watch; a nil channel if dir cannot
// be watched.
func watchCreate(dir string) (<-chan struct{}, func()) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, nil
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return nil, nil
	}
	// A non-blocking descriptor: reads wait in the runtime's poller, and
	// Close ends a read in progress.
	f := os.NewFile(uintptr(fd), "inotify")
	created := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			select {
			case created <- struct{}{}:
			default:
			}
		}
	}()
	// Closed in the background: closing an inotify instance waits for an
	// SRCU grace period of the kernel's (fsnotify's marks), which cost
	// every start 13 ms p50 beside a build. The reader above ends with
	// the close.
	return created, func() { go f.Close() }
}
