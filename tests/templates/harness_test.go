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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/helperproc"
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
	// newerBin holds hivecrew-helper and hivecrew-guestagent built as
	// newerVersion.
	newerBin string
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
		// Two links at a time: each is mostly one core's work.
		var builds errgroup.Group
		builds.SetLimit(2)
		for _, b := range []struct{ pkg, out, version string }{
			{"./app", "hivecrew", version}, {"./xpchelper", "hivecrew-helper", version},
			{"./guestagent", "hivecrew-guestagent", version}, {"./xpchelper", "newer/hivecrew-helper", newerVersion},
			{"./guestagent", "newer/hivecrew-guestagent", newerVersion},
		} {
			builds.Go(func() error { return build(b.pkg, filepath.Join(dir, b.out), b.version) })
		}
		if err := builds.Wait(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		bin, newerBin = dir, filepath.Join(dir, "newer")
		cacheDir = os.Getenv("HIVECREW_CACHE_DIR")
		if cacheDir == "" {
			cacheDir = "/var/tmp/hivecrew-test-cache"
		}
		os.Setenv("HIVECREW_CACHE_DIR", cacheDir) // for the helpers this starts
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
type helper struct{ *helperproc.Proc }

// startHelper starts a helper (the one in dir, default the tested one) on
// home with extra serve arguments for one test, and stops it when the test
// ends (see stop).
func startHelper(t *testing.T, home, dir string, args ...string) *helper {
	t.Helper()
	if dir == "" {
		dir = bin
	}
	h := &helper{helperproc.Start(t, dir, home, args...)}
	t.Cleanup(func() { // runs before Start's, which then only shows the log
		if err := h.stop(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// stop stops the helper with SIGTERM and checks that nothing of its VMs
// stays mounted or running.
func (h *helper) stop() error {
	if h.Running() {
		if err := h.Term(60 * time.Second); err != nil {
			return err
		}
	}
	if m := h.Mounts(); len(m) > 0 {
		return fmt.Errorf("mounts left under %s after the helper stopped:\n%s", h.Home, strings.Join(m, "\n"))
	}
	if p := procsMentioning(h.Home); len(p) > 0 {
		return fmt.Errorf("processes of %s left after the helper stopped:\n%s", h.Home, strings.Join(p, "\n"))
	}
	if s := h.Sandboxes(); len(s) > 0 {
		return fmt.Errorf("sandboxes of %s left after the helper stopped:\n%s", h.Home, s)
	}
	return nil
}

// cli runs the hivecrew CLI against the helper.
func (h *helper) cli(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(filepath.Join(bin, "hivecrew"), append([]string{"--home", h.Home}, args...)...)
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

// provider adds a scripted provider named after the test and returns its
// name.
func (h *helper) provider(t *testing.T, llm *llmtest.Server) string {
	t.Helper()
	name := "Scripted " + t.Name()
	h.AddProvider(t, name, llm.URL, "sk-test")
	return name
}

// task queues a task whose agent may run shell commands.
func (h *helper) task(t *testing.T, provider, template, description string, files ...string) wire.Task {
	t.Helper()
	task, err := h.Unix.CreateTask(context.Background(), wire.CreateTask{Description: description, ProviderName: provider, ModelID: "scripted",
		TemplateID: template, OutputDirectory: t.TempDir(), ToolPolicy: map[string]string{"run_shell": "allow"}}, files...)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func ended(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() }

// waitTemplate polls a template until its build ends.
func (h *helper) waitTemplate(t *testing.T, id string, within time.Duration) wire.Template {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		tm, err := h.Unix.Template(context.Background(), id)
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
	vms, err := h.Unix.VMs(context.Background())
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
func openStore(t *testing.T, home string) *store.Store { return helperproc.OpenStore(t, home) }
