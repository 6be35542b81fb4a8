package templates

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestCreateLinuxDesktop: `hivecrew templates create linux-desktop`
// builds the minimal Debian desktop with debootstrap, showing progress
// phase by phase, and registers a ready rootfs template: the root
// filesystem holds Xvfb, openbox, D-Bus, AT-SPI, xterm and the helper's
// guest agent, the guest's folder /opt belongs to the sandbox account, and
// the build log tells the story.
func TestCreateLinuxDesktop(t *testing.T) {
	h := shared.get(t)
	t.Logf("templates create linux-desktop took %s", shared.took.Round(time.Second))
	if !strings.Contains(shared.createOut, "Template linux-desktop (Linux desktop (Debian 12)) is ready") {
		t.Fatalf("create printed:\n%s", shared.createOut)
	}
	// Progress: lines "NN% phase: message", percentages never going back,
	// through the bootstrap and package phases.
	progress := regexp.MustCompile(`^\s*(\d+)% (\w+): `)
	last, phases := -1, map[string]bool{}
	for _, l := range lines(shared.createErr) {
		m := progress.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected progress line %q in:\n%s", l, shared.createErr)
		}
		pct, _ := strconv.Atoi(m[1])
		if pct < last {
			t.Fatalf("progress went back (%d%% after %d%%):\n%s", pct, last, shared.createErr)
		}
		last, phases[m[2]] = pct, true
	}
	if !phases["bootstrap"] || !phases["packages"] {
		t.Fatalf("progress did not show the bootstrap and packages phases:\n%s", shared.createErr)
	}

	var l wire.TemplateList
	if err := json.Unmarshal([]byte(h.mustCLI(t, "templates", "ls", "--json")), &l); err != nil {
		t.Fatal(err)
	}
	var tm *wire.Template
	for i := range l.Templates {
		if l.Templates[i].ID == "linux-desktop" {
			tm = &l.Templates[i]
		}
	}
	if tm == nil || tm.Status != "ready" || tm.Kind != "rootfs" || tm.OS != "linux" || tm.AgentVersion != version || tm.AgentOutdated ||
		tm.Manifest != "linux-desktop" || tm.ManifestVersion != 4 || tm.CPUCount != 2 || tm.MemoryMB != 2048 {
		t.Fatalf("templates ls: %+v", l.Templates)
	}
	root := filepath.Join(shared.home, "Templates", "linux-desktop", "rootfs")
	for _, f := range []string{"usr/bin/Xvfb", "usr/bin/openbox", "usr/bin/dbus-daemon", "usr/libexec/at-spi-bus-launcher", "usr/bin/xterm",
		"usr/bin/xdg-open", "usr/local/bin/hivecrew-guestagent", "etc/debian_version", "etc/hivecrew-template.json"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the template lacks /%s: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/debian_version")); !strings.HasPrefix(string(b), "12.") {
		t.Errorf("etc/debian_version = %q, want Debian 12", b)
	}
	if fi, err := os.Stat(filepath.Join(root, "opt")); err != nil || fi.Sys().(*syscall.Stat_t).Uid == 0 {
		t.Errorf("/opt of the template is not the sandbox account's: %v", err)
	}
	if debs, _ := filepath.Glob(filepath.Join(root, "var/cache/apt/archives/*.deb")); len(debs) > 0 {
		t.Errorf("the template keeps %d downloaded packages", len(debs))
	}
	if fi, err := os.Stat(filepath.Join(root, "usr/sbin/policy-rc.d")); err == nil {
		t.Errorf("the build's policy-rc.d stayed: %v", fi.Name())
	}
	log := h.mustCLI(t, "templates", "log", "linux-desktop")
	for _, want := range []string{"debootstrap --variant=minbase", "apt-get install", "# done in"} {
		if !strings.Contains(log, want) {
			t.Errorf("the build log lacks %q", want)
		}
	}
	// The manifests this helper can build.
	ms := h.mustCLI(t, "templates", "manifests")
	if !regexp.MustCompile(`(?m)^linux-desktop\s+4\s+linux\s+--full --with libreoffice\s+yes`).MatchString(ms) ||
		!regexp.MustCompile(`(?m)^macos-15-base\s+1\s+macos\s+-\s+no`).MatchString(ms) {
		t.Errorf("templates manifests:\n%s", ms)
	}
	// Bad requests are told apart from failures.
	if _, errOut, err := h.cli("templates", "create", "linux-desktop", "--with", "games"); err == nil || !strings.Contains(errOut, `no optional set "games" (this template has: libreoffice)`) {
		t.Errorf("create --with games: %v %s", err, errOut)
	}
	if _, errOut, err := h.cli("templates", "create", "macos-15-base"); err == nil || !strings.Contains(errOut, "macOS templates need a Mac with Apple silicon") {
		t.Errorf("create macos-15-base on Linux: %v %s", err, errOut)
	}
}

// TestDeleteCancelsABuild: deleting a template while it builds stops the
// build at once (debootstrap and all), and leaves neither the template,
// its folder nor a process behind.
func TestDeleteCancelsABuild(t *testing.T) {
	h := shared.get(t)
	ctx := context.Background()
	tm, err := h.Unix.CreateTemplate(ctx, wire.CreateTemplate{Manifest: "linux-desktop", Name: "Doomed", Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if tm.Status != "building" || tm.ID != "linux-desktop-2" || strings.Join(tm.Options, ",") != "full" {
		t.Fatalf("created %+v", tm)
	}
	dir := filepath.Join(shared.home, "Templates", tm.ID)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		cur, err := h.Unix.Template(ctx, tm.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Progress != nil && cur.Progress.Phase == "bootstrap" && len(procsMentioning(dir)) > 0 {
			break // debootstrap is running
		}
		if cur.Status != "building" || time.Now().After(deadline) {
			t.Fatalf("the build did not get to debootstrap: %+v %+v", cur, cur.Progress)
		}
		time.Sleep(100 * time.Millisecond)
	}
	started := time.Now()
	h.mustCLI(t, "templates", "rm", tm.ID)
	if d := time.Since(started); d > 20*time.Second {
		t.Errorf("deleting a building template took %s", d)
	}
	if _, err := h.Unix.Template(ctx, tm.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("the deleted template is still there: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("its folder is still there: %v", err)
	}
	time.Sleep(time.Second)
	if p := procsMentioning(dir); len(p) > 0 {
		t.Errorf("build processes left: %v", p)
	}
	if m := helperproc.Mounts(dir, nil); len(m) > 0 {
		t.Errorf("mounts left: %v", m)
	}
}

// TestClonesAreIsolated: tasks run in VMs cloned from the template, two
// at once: each sees the template's system, writes into its own clone,
// never sees the other's writes, and the template does not change.
func TestClonesAreIsolated(t *testing.T) {
	h := shared.get(t)
	llm := llmtest.New(t)
	p := h.provider(t, llm)
	holdA := make(chan struct{})
	// A writes /opt/a.txt, then waits (its model holds the answer) while B
	// runs; then A lists /opt.
	llm.Script("[[clone-a]]", append([]llmtest.Turn{
		llmtest.Tool("run_shell", map[string]any{"command": `cat /etc/debian_version /etc/hivecrew-template.json; echo from-a > /opt/a.txt; echo A-"WROTE"`}),
		{Hold: holdA, Msg: llmtest.Tool("run_shell", map[string]any{"command": `echo LIST-"A"; ls -A /opt; echo END-"A"`}).Msg},
	}, llmtest.Done("A done")...)...)
	llm.Script("[[clone-b]]", append([]llmtest.Turn{
		llmtest.Tool("run_shell", map[string]any{"command": `echo LIST-"B"; ls -A /opt; echo END-"B"; echo from-b > /opt/b.txt`}),
	}, llmtest.Done("B done")...)...)
	a := h.task(t, p, "linux-desktop", "Write a file [[clone-a]]")
	h.WaitTask(t, a.ID, "A to write its file", 2*time.Minute, func(x wire.Task) bool {
		return strings.Contains(told(llm, "[[clone-a]]"), "A-WROTE") || ended(x)
	})
	b := h.task(t, p, "linux-desktop", "List the files [[clone-b]]")
	bDone := h.WaitTask(t, b.ID, "B to end", 2*time.Minute, ended)
	aRunning, _ := h.Unix.Task(context.Background(), a.ID)
	close(holdA)
	aDone := h.WaitTask(t, a.ID, "A to end", 2*time.Minute, ended)
	if aDone.Status != "completed" || bDone.Status != "completed" {
		t.Fatalf("tasks ended %s (%v) and %s (%v)", aDone.Status, *aDone.ResultSummary, bDone.Status, *bDone.ResultSummary)
	}
	if aRunning.Status != "running" || aRunning.VMID == "" || aRunning.VMID == bDone.VMID {
		t.Fatalf("A was not running in a VM of its own while B ran: A %s in %q, B in %q", aRunning.Status, aRunning.VMID, bDone.VMID)
	}
	toldA, toldB := told(llm, "[[clone-a]]"), told(llm, "[[clone-b]]")
	// (Markers are spelled with quotes in the commands, so that only the
	// output contains them.)
	if sys := between(toldA, "exitCode", "A-WROTE"); !strings.Contains(sys, "12.") || !strings.Contains(sys, "manifest") || !strings.Contains(sys, "linux-desktop") {
		t.Errorf("A's VM does not run the template's system: %s", sys)
	}
	if !strings.Contains(toldB, "END-B") || !strings.Contains(toldA, "END-A") {
		t.Fatalf("the listings did not run:\nA: %s\nB: %s", tail(toldA, 1500), tail(toldB, 1500))
	}
	t.Logf("A listed %q, B listed %q", between(toldA, "LIST-A", "END-A"), between(toldB, "LIST-B", "END-B"))
	if got := between(toldB, "LIST-B", "END-B"); strings.Contains(got, "a.txt") {
		t.Errorf("clone B saw clone A's file: %q", got)
	}
	if got := between(toldA, "LIST-A", "END-A"); !strings.Contains(got, "a.txt") || strings.Contains(got, "b.txt") {
		t.Errorf("clone A listed %q: want its own a.txt and not B's b.txt", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(shared.home, "Templates", "linux-desktop", "rootfs", "opt")); len(ents) != 0 {
		t.Errorf("the template changed: /opt has %d entries", len(ents))
	}
}

// between returns the text between the first start and the next end
// markers (to the end when end is empty or missing).
func between(s, start string, end ...string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if len(end) > 0 {
		if j := strings.Index(s, end[0]); j >= 0 {
			s = s[:j]
		}
	}
	if len(s) > 2000 {
		s = s[:2000]
	}
	return s
}
