// Package templates tests VM templates end to end: the real
// hivecrew-helper (as root, with the sandbox backend) builds a Debian root
// filesystem with debootstrap from Debian's mirror, real sandboxes clone
// it, a VM is sealed into a new template, templates are edited, made the
// default and deleted, guest-agent versions are checked, and the files of
// a task go in and out of real sandboxes. The only fake is the LLM (a
// scripted OpenAI-compatible server).
//
// Downloads are cached in $HIVECREW_CACHE_DIR (default
// /var/tmp/hivecrew-test-cache), so repeated runs do not download again.
package templates

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
)

// Versions the binaries are built as: the helper and its guest agent, and a
// newer helper (whose templates and VMs built with the older agent are
// flagged).
const (
	version      = "v1.2.0"
	newerVersion = "v1.3.0"
)

var (
	// bin holds hivecrew, hivecrew-helper and hivecrew-guestagent (version).
	bin string
	// newerHelper is hivecrew-helper built as newerVersion.
	newerHelper string
	// cacheDir is the download cache the helpers share.
	cacheDir string
)

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "hc-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		os.Chmod(dir, 0o755) // sandboxes run the guest agent as another account
		for _, b := range []struct{ pkg, out, version string }{
			{"./app", "hivecrew", version}, {"./xpchelper", "hivecrew-helper", version},
			{"./guestagent", "hivecrew-guestagent", version}, {"./xpchelper", "newer/hivecrew-helper", newerVersion},
		} {
			if err := build(b.pkg, filepath.Join(dir, b.out), b.version); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		bin, newerHelper = dir, filepath.Join(dir, "newer", "hivecrew-helper")
		cacheDir = os.Getenv("HIVECREW_CACHE_DIR")
		if cacheDir == "" {
			cacheDir = "/var/tmp/hivecrew-test-cache"
		}
		defer shared.close()
		return m.Run()
	}()
	os.Exit(code)
}

// build builds a package as a version, statically (the guest agent runs
// inside root filesystems of their own).
func build(pkg, out, ver string) error {
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/hivecrew/hivecrew/core/version.Version="+ver, "-o", out, pkg)
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if pkg != "./guestagent" {
		cmd.Env = os.Environ()
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// helper is a running hivecrew-helper process.
type helper struct {
	home string
	cmd  *exec.Cmd
	unix *client.Client
	// mu guards logs.
	mu     sync.Mutex
	logs   bytes.Buffer
	exited chan error
}

// start starts a helper (exe, default the tested one) on home with extra
// serve arguments, and waits for its banner.
func start(home, exe string, args ...string) (*helper, error) {
	if exe == "" {
		exe = filepath.Join(bin, "hivecrew-helper")
	}
	h := &helper{home: home, exited: make(chan error, 1)}
	h.cmd = exec.Command(exe, append([]string{"serve", "--home", home, "--addr", "127.0.0.1:0"}, args...)...)
	h.cmd.Env = append(os.Environ(), "HIVECREW_CACHE_DIR="+cacheDir)
	h.cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.logs.Write(b)
	})
	stdout, _ := h.cmd.StdoutPipe()
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { h.exited <- h.cmd.Wait() }()
	addr, _ := daemontest.ReadBanner(stdout)
	go io.Copy(io.Discard, stdout)
	if addr == "" {
		h.cmd.Process.Kill()
		<-h.exited
		return nil, fmt.Errorf("helper did not start:\n%s", h.logText())
	}
	h.unix = client.NewUnix(filepath.Join(home, "helper.sock"))
	return h, nil
}

// startHelper starts a helper for one test, stopped when it ends.
func startHelper(t *testing.T, home, exe string, args ...string) *helper {
	t.Helper()
	h, err := start(home, exe, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("helper log:\n%s", h.logText())
		}
	})
	return h
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func (h *helper) logText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.String()
}

// stop stops the helper with SIGTERM and checks that nothing of its VMs
// stays mounted or running.
func (h *helper) stop() error {
	if h.cmd.ProcessState == nil {
		h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-h.exited:
			if err != nil {
				return fmt.Errorf("helper exited with %v after SIGTERM", err)
			}
		case <-time.After(60 * time.Second):
			h.cmd.Process.Kill()
			return fmt.Errorf("helper did not stop within 60 s of SIGTERM")
		}
	}
	if m := mountsUnder(h.home); len(m) > 0 {
		return fmt.Errorf("mounts left under %s after the helper stopped:\n%s", h.home, strings.Join(m, "\n"))
	}
	if p := procsMentioning(h.home); len(p) > 0 {
		return fmt.Errorf("processes of %s left after the helper stopped:\n%s", h.home, strings.Join(p, "\n"))
	}
	return nil
}

// cli runs the hivecrew CLI against the helper.
func (h *helper) cli(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(filepath.Join(bin, "hivecrew"), append([]string{"--home", h.home}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// mustCLI runs the CLI and fails the test when it fails.
func (h *helper) mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := h.cli(args...)
	if err != nil {
		t.Fatalf("hivecrew %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// settings patches the helper's settings.
func (h *helper) settings(t *testing.T, patch map[string]any) {
	t.Helper()
	if _, err := h.unix.PatchSettings(context.Background(), patch); err != nil {
		t.Fatal(err)
	}
}

// provider adds a scripted provider named after the test and returns its
// name.
func (h *helper) provider(t *testing.T, llm *llmtest.Server) string {
	t.Helper()
	name, base, key, model := "Scripted "+t.Name(), llm.URL, "sk-test", "scripted"
	if _, err := h.unix.AddProvider(context.Background(), wire.ProviderInput{DisplayName: &name, BaseURL: &base, APIKey: &key, DefaultModelID: &model}); err != nil {
		t.Fatal(err)
	}
	return name
}

// task queues a task whose agent may run shell commands.
func (h *helper) task(t *testing.T, provider, template, description string, files ...string) wire.Task {
	t.Helper()
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: description, ProviderName: provider, ModelID: "scripted",
		TemplateID: template, OutputDirectory: t.TempDir(), ToolPolicy: map[string]string{"run_shell": "allow"}}, files...)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// wait polls a task until ok says so.
func (h *helper) wait(t *testing.T, id, what string, within time.Duration, ok func(wire.Task) bool) wire.Task {
	t.Helper()
	return daemontest.WaitTask(t, h.unix, id, what, within, ok)
}

func ended(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() }

// waitTemplate polls a template until its build ends.
func (h *helper) waitTemplate(t *testing.T, id string, within time.Duration) wire.Template {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		tm, err := h.unix.Template(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if tm.Status != "building" {
			return tm
		}
		if time.Now().After(deadline) {
			t.Fatalf("template %s still building after %s: %+v", id, within, tm.Progress)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// vm returns a VM of the helper by id.
func (h *helper) vm(t *testing.T, id string) (wire.VM, bool) {
	t.Helper()
	vms, err := h.unix.VMs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vms {
		if v.ID == id {
			return v, true
		}
	}
	return wire.VM{}, false
}

// shellOutputs returns what the scripted model was told, request by
// request, for the task with marker.
func told(llm *llmtest.Server, marker string) string {
	return strings.Join(llm.Requests(marker), "\n")
}

// mountsUnder lists the mounts whose mount point or source lies under dir.
func mountsUnder(dir string) []string {
	raw, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, dir+"/") {
			out = append(out, line)
		}
	}
	return out
}

// procsMentioning lists processes whose command line names path (a
// template build's or a VM's folder).
func procsMentioning(path string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(string(raw), "\x00", " ")
		if strings.Contains(cmd, path+"/") && !strings.Contains(cmd, "hivecrew-helper serve") {
			out = append(out, e.Name()+": "+cmd)
		}
	}
	return out
}

// newHome returns a fresh, short data directory (unix socket paths are
// short).
func newHome(t *testing.T) string { return daemontest.NewHome(t) }

// openStore opens a stopped helper's database.
func openStore(t *testing.T, home string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(home, "hivecrew.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
