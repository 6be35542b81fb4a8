// Package helper tests the helper as users run it: the real
// hivecrew-helper process with real sandbox guests, the hivecrew CLI, and a
// scripted OpenAI-compatible provider (the only fake).
package helper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/testbin"
)

var bin string

func TestMain(m *testing.M) {
	dir, cleanup, err := testbin.BuildAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// proc is a running hivecrew-helper.
type proc struct {
	t    *testing.T
	home string
	cmd  *exec.Cmd
	addr string
	key  string
	unix *client.Client
	// mu guards logs.
	mu     sync.Mutex
	logs   bytes.Buffer
	exited chan error
}

// newHome returns a fresh, short data directory.
func newHome(t *testing.T) string { return daemontest.NewHome(t) }

// startHelper starts the helper on home and waits for its banner.
func startHelper(t *testing.T, home string) *proc {
	t.Helper()
	p := &proc{t: t, home: home, exited: make(chan error, 1)}
	p.cmd = exec.Command(filepath.Join(bin, "hivecrew-helper"), "serve", "--home", home, "--addr", "127.0.0.1:0", "--print-api-key")
	stdout, _ := p.cmd.StdoutPipe()
	p.cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.logs.Write(b)
	})
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	p.addr, p.key = daemontest.ReadBanner(stdout)
	go io.Copy(io.Discard, stdout)
	if p.addr == "" {
		p.cmd.Process.Kill()
		t.Fatalf("helper did not start:\n%s", p.logText())
	}
	p.unix = client.NewUnix(filepath.Join(home, "helper.sock"))
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.term(30 * time.Second)
		}
		// Whatever happened, nothing of this helper's sandboxes stays
		// mounted once it has stopped (a killed helper's are undone by the
		// next start, which stops before this runs).
		if m := mountsOf(home); len(m) > 0 {
			t.Errorf("mounts left after the helper stopped:\n%s", strings.Join(m, "\n"))
		}
		if t.Failed() {
			t.Logf("helper log:\n%s", p.logText())
		}
	})
	return p
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// term sends SIGTERM and waits for a clean exit.
func (p *proc) term(within time.Duration) {
	p.t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			p.t.Fatalf("helper exited with %v after SIGTERM", err)
		}
	case <-time.After(within):
		p.cmd.Process.Kill()
		p.t.Fatalf("helper did not stop within %s of SIGTERM", within)
	}
}

// kill SIGKILLs the helper.
func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// addProvider points the helper at the scripted provider.
func (p *proc) addProvider(llm *llmtest.Server, key string) {
	p.t.Helper()
	name, base, model := "Scripted", llm.URL, "scripted"
	if _, err := p.unix.AddProvider(context.Background(), wire.ProviderInput{DisplayName: &name, BaseURL: &base, APIKey: &key, DefaultModelID: &model}); err != nil {
		p.t.Fatal(err)
	}
}

// settings patches the helper's settings.
func (p *proc) settings(patch map[string]any) {
	p.t.Helper()
	if _, err := p.unix.PatchSettings(context.Background(), patch); err != nil {
		p.t.Fatal(err)
	}
}

// dropWarmVMs removes the VMs the warm pool booted with the settings the
// helper started with.
func (p *proc) dropWarmVMs() {
	p.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		vms, err := p.unix.VMs(ctx)
		if err != nil {
			p.t.Fatal(err)
		}
		if len(vms) == 0 {
			return
		}
		for _, v := range vms {
			p.unix.RemoveVM(ctx, v.ID) // a VM still booting is not listed as removable yet
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("warm VMs remain: %+v", vms)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTask polls a task until ok says so.
func (p *proc) waitTask(id, what string, within time.Duration, ok func(wire.Task) bool) wire.Task {
	p.t.Helper()
	return daemontest.WaitTask(p.t, p.unix, id, what, within, ok)
}

func terminal(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() }

// sandboxProcs lists running sandboxes: bubblewrap processes whose command
// lines name a VM folder under home or the root helper's staging folder
// (tests run one at a time, so every one belongs to the helper under test).
func sandboxProcs(home string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(string(raw), "\x00", " ")
		if !strings.Contains(strings.SplitN(cmd, " ", 2)[0], "bwrap") {
			continue
		}
		if strings.Contains(cmd, filepath.Join(home, "VMs")) || strings.Contains(cmd, "/run/hivecrew-sandbox/") {
			out = append(out, e.Name()+": "+cmd)
		}
	}
	return out
}

var vmID = regexp.MustCompile(`vm-[0-9a-f]{12}`)

// countVMs counts the distinct VMs named in process command lines (a
// sandbox is two bubblewrap processes).
func countVMs(procs []string) int {
	seen := map[string]bool{}
	for _, p := range procs {
		seen[vmID.FindString(p)] = true
	}
	return len(seen)
}

// mountsOf lists the mounts whose source is under home (a sandbox's
// staged folders that were never unmounted).
func mountsOf(home string) []string {
	raw, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, home+"/") {
			out = append(out, line)
		}
	}
	return out
}

// vmDirs lists the VM folders under home.
func vmDirs(home string) []string {
	ents, _ := os.ReadDir(filepath.Join(home, "VMs"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// checkStore opens the stopped helper's database and checks its integrity.
func checkStore(t *testing.T, home string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(home, "hivecrew.db"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}
