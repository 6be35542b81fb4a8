// Package helperproc runs the real hivecrew-helper process for end-to-end
// tests: it starts `hivecrew-helper serve --print-api-key` on a data
// directory, reads its banner (address and API key), keeps its log, stops
// it with SIGTERM or SIGKILL, and offers the calls the tests share (add a
// provider, patch settings, drop warm VMs, wait for a task, open the
// stopped helper's database).
//
// It also lists what a helper's sandboxes leave on the machine — bubblewrap
// processes, mounts, VM folders — scoped to that helper alone: to the VM
// ids seen under <home>/VMs (watched while the helper runs) and those its
// pool reports, never to every sandbox on the machine, since other tests
// may run real sandboxes at the same time.
package helperproc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/testbin"
)

// StopTimeout bounds how long Start's cleanup waits for a helper still
// running at the end of its test to stop after SIGTERM.
const StopTimeout = 30 * time.Second

// Proc is a running (or stopped) hivecrew-helper process.
type Proc struct {
	// Home is the data directory, Addr the TCP listen address (host:port)
	// and Key the API key the helper printed.
	Home, Addr, Key string
	// Pid is the helper's process id: its sandboxes are its children.
	Pid int
	// Unix is a client over the helper's unix socket (it needs no key).
	Unix *client.Client
	// IDs are the VMs seen under Home/VMs by every helper of Home.
	IDs *VMIDs

	cmd     *exec.Cmd
	logs    LogBuffer
	atEnd   []func()      // checks Start's cleanup runs once the helper stopped
	done    chan struct{} // closed once the process has exited
	waitErr error         // the exit, once done is closed
}

// LogBuffer is a goroutine-safe buffer for a helper's log.
type LogBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (l *LogBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

// String returns what was written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Launch starts bin/hivecrew-helper serve on home (127.0.0.1:0, the API key
// printed) with extra serve arguments and returns once its banner is out.
// The process inherits this one's environment.
func Launch(bin, home string, args ...string) (*Proc, error) {
	p := &Proc{Home: home, IDs: IDsOf(home), done: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(bin, "hivecrew-helper"), append([]string{"serve", "--home", home, "--addr", "127.0.0.1:0", "--print-api-key"}, args...)...)
	p.cmd.Stderr = &p.logs
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.Pid = p.cmd.Process.Pid
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	go p.IDs.watchUntil(p.done)
	p.Addr, p.Key = daemontest.ReadBanner(stdout)
	go io.Copy(io.Discard, stdout)
	if p.Addr == "" {
		p.Kill()
		return nil, fmt.Errorf("helper did not start:\n%s", p.Logs())
	}
	p.Unix = client.NewUnix(filepath.Join(home, "helper.sock"))
	return p, nil
}

// Start launches the helper (see Launch) for one test, or fails it. When
// the test ends, a helper still running is stopped with SIGTERM (it must
// exit cleanly within StopTimeout), the checks given to AtEnd run, and
// the log is shown if the test failed.
func Start(t testing.TB, bin, home string, args ...string) *Proc {
	t.Helper()
	p, err := Launch(bin, home, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.Running() {
			if err := p.Term(StopTimeout); err != nil {
				t.Error(err)
			}
		}
		for _, check := range p.atEnd {
			check()
		}
		if t.Failed() {
			t.Logf("helper %d log:\n%s", p.Pid, p.Logs())
		}
	})
	return p
}

// AtEnd adds a check that Start's cleanup runs once the helper has
// stopped, before the log is shown.
func (p *Proc) AtEnd(check func()) { p.atEnd = append(p.atEnd, check) }

// NoMountsAtEnd fails the test when, once the helper has stopped at its
// end, something of its home or VMs is still mounted (a killed helper's
// mounts are undone by the next start on the same home, whose cleanup
// runs first).
func (p *Proc) NoMountsAtEnd(t testing.TB) {
	p.AtEnd(func() {
		if m := p.Mounts(); len(m) > 0 {
			t.Errorf("mounts left after the helper %d stopped:\n%s", p.Pid, strings.Join(m, "\n"))
		}
	})
}

// Logs returns what the helper logged so far.
func (p *Proc) Logs() string { return p.logs.String() }

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Term sends SIGTERM and waits up to within for a clean exit (status 0);
// it SIGKILLs the helper when it takes longer. A helper already gone is
// not signalled again; its exit is reported all the same.
func (p *Proc) Term(within time.Duration) error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.waitErr != nil {
			return fmt.Errorf("helper exited with %v after SIGTERM", p.waitErr)
		}
		return nil
	case <-time.After(within):
		p.Kill()
		return fmt.Errorf("helper did not stop within %s of SIGTERM", within)
	}
}

// Kill SIGKILLs the helper and waits for it to be gone.
func (p *Proc) Kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// AddProvider points the helper at the scripted provider (see AddProvider).
func (p *Proc) AddProvider(t testing.TB, name, baseURL, key string) {
	t.Helper()
	AddProvider(t, p.Unix, name, baseURL, key)
}

// Settings patches the helper's settings.
func (p *Proc) Settings(t testing.TB, patch map[string]any) {
	t.Helper()
	Settings(t, p.Unix, patch)
}

// DropWarmVMs removes the VMs the warm pool booted (see DropWarmVMs).
func (p *Proc) DropWarmVMs(t testing.TB) {
	t.Helper()
	DropWarmVMs(t, p.Unix)
}

// WaitTask polls a task until ok says so (see daemontest.WaitTask).
func (p *Proc) WaitTask(t testing.TB, id, what string, within time.Duration, ok func(wire.Task) bool) wire.Task {
	t.Helper()
	return daemontest.WaitTask(t, p.Unix, id, what, within, ok)
}

// AddProvider adds, through c, an OpenAI-compatible provider at baseURL
// with key and model "scripted" (an llmtest server), named name.
func AddProvider(t testing.TB, c *client.Client, name, baseURL, key string) {
	t.Helper()
	model := "scripted"
	if _, err := c.AddProvider(context.Background(), wire.ProviderInput{DisplayName: &name, BaseURL: &baseURL, APIKey: &key, DefaultModelID: &model}); err != nil {
		t.Fatal(err)
	}
}

// Settings patches, through c, a helper's settings.
func Settings(t testing.TB, c *client.Client, patch map[string]any) {
	t.Helper()
	if _, err := c.PatchSettings(context.Background(), patch); err != nil {
		t.Fatal(err)
	}
}

// DropWarmVMs removes, through c, the VMs the warm pool booted with the
// settings the helper started with, and fails the test when some remain
// after a minute.
func DropWarmVMs(t testing.TB, c *client.Client) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		vms, err := c.VMs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(vms) == 0 {
			return
		}
		for _, v := range vms {
			c.RemoveVM(ctx, v.ID) // a VM still booting is not listed as removable yet
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm VMs remain: %+v", vms)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// OpenStore opens a stopped helper's database, closed when the test ends.
func OpenStore(t testing.TB, home string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(home, "hivecrew.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// CheckStore opens a stopped helper's database (see OpenStore) and fails
// the test unless it passes its integrity check.
func CheckStore(t testing.TB, home string) *store.Store {
	t.Helper()
	st := OpenStore(t, home)
	if err := st.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

// Main builds hivecrew, hivecrew-helper and hivecrew-guestagent (see
// testbin.BuildAll) into a folder it stores in *bin, runs the tests of m,
// removes the folder and exits with their status: a TestMain for packages
// that start helpers with Start.
func Main(m *testing.M, bin *string) {
	dir, cleanup, err := testbin.BuildAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = dir
	code := m.Run()
	cleanup()
	os.Exit(code)
}
