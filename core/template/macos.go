package template

import (
	"context"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/templates"
)

// restoreImage returns the local path of the restore image a macOS build
// installs: an .ipsw path as it is; an https URL, or "latest" (the URL
// latestURL answers), downloaded resumably into the cache with progress.
func restoreImage(ctx context.Context, s buildSpec, latestURL func(context.Context) (string, error), client *http.Client) (string, error) {
	src := or(s.restoreImage, s.manifest.MacOS.RestoreImage)
	if err := CheckRestoreImage(src); err != nil {
		return "", errdefs.Invalidf("restore image: %v", err)
	}
	if filepath.IsAbs(src) {
		if fi, err := os.Stat(src); err != nil || !fi.Mode().IsRegular() {
			return "", errdefs.NotFoundf("restore image %s not found", src)
		}
		s.track.set(PhaseDownload, 1, "using "+filepath.Base(src))
		return src, nil
	}
	if src == "latest" {
		s.track.set(PhaseDownload, 0, "asking Apple for the latest supported restore image")
		u, err := latestURL(ctx)
		if err != nil {
			return "", fmt.Errorf("find the latest supported restore image: %w", err)
		}
		src = u
	}
	if err := checkDownloadURL(src); err != nil {
		return "", err
	}
	u, err := url.Parse(src)
	if err != nil {
		return "", errdefs.Invalidf("restore image URL %q: %v", src, err)
	}
	name := path.Base(u.Path)
	if name == "." || name == "/" || !strings.HasSuffix(strings.ToLower(name), ".ipsw") {
		name = slug(u.Host+u.Path) + ".ipsw"
	}
	dir := filepath.Join(s.cacheDir, "restore-images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, name)
	fmt.Fprintf(s.log, "restore image %s -> %s\n", src, dst)
	err = download(ctx, client, src, dst, func(done, total int64) {
		f := 0.0
		if total > 0 {
			f = float64(done) / float64(total)
		}
		s.track.set(PhaseDownload, f, fmt.Sprintf("downloading %s: %s of %s", name, mib(done), mib(total)))
	})
	if err != nil {
		return "", err
	}
	return dst, nil
}

func mib(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f MB", float64(n)/(1<<20))
}

// launchAgentPlist is the guest agent's LaunchAgent for a manifest: it
// runs the agent in the auto-login user's GUI session, listening on the
// protocol's vsock port, with the shared folder's mount path.
func launchAgentPlist(m *MacOS) string {
	args := []string{m.Agent.Path, "--listen", fmt.Sprintf("vsock:%d", protocol.DefaultVsockPort), "--shared", m.SharedFolder, "--poweroff"}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>com.hivecrew.guestagent</string>
	<key>ProgramArguments</key>
	<array>
`)
	for _, a := range args {
		fmt.Fprintf(&b, "\t\t<string>%s</string>\n", html.EscapeString(a))
	}
	b.WriteString(`	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<true/>
	<key>LimitLoadToSessionType</key>
	<string>Aqua</string>
	<key>ProcessType</key>
	<string>Interactive</string>
	<key>ThrottleInterval</key>
	<integer>2</integer>
	<key>StandardErrorPath</key>
	<string>/Users/Shared/Hivecrew/guestagent.log</string>
</dict>
</plist>
`)
	return b.String()
}

// KitDir is the folder of a template's shared folder that holds what its
// guided setup installs.
const KitDir = "install"

// stageKit puts the guest agent kit into a shared folder's install/: the
// agent binary (built for the guest), its LaunchAgent and
// install-agent.sh, which installs both from inside the guest.
func stageKit(shared string, man *Manifest, agent string) error {
	if agent == "" {
		return errNoAgent
	}
	script, err := fs.ReadFile(man.dirOrBuiltin(), "install-agent.sh")
	if err != nil {
		return fmt.Errorf("the guest agent install script: %w", err)
	}
	dir := filepath.Join(shared, KitDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := copyFile(agent, filepath.Join(dir, "hivecrew-guestagent"), 0o755); err != nil {
		return fmt.Errorf("stage the guest agent: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "com.hivecrew.guestagent.plist"), []byte(launchAgentPlist(man.MacOS)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "install-agent.sh"), script, 0o755)
}

// dirOrBuiltin is the manifest's folder, or the built-in macOS one for a
// folder that lacks a file.
func (m *Manifest) dirOrBuiltin() fs.FS {
	if m.dir != nil {
		if _, err := fs.Stat(m.dir, "install-agent.sh"); err == nil {
			return m.dir
		}
	}
	sub, _ := fs.Sub(templates.FS, "macos-15-base")
	return sub
}

// SetupSteps returns the guided setup of a macOS template.
func (m *Manager) SetupSteps(ctx context.Context, id string) ([]Step, error) {
	t, err := m.cfg.Store.GetTemplate(ctx, id)
	if err != nil {
		return nil, err
	}
	man, err := m.manifestOf(t)
	if err != nil {
		return nil, err
	}
	return man.MacOS.Setup, nil
}

// manifestOf returns the macOS manifest a template was built from (the
// built-in one when that is gone).
func (m *Manager) manifestOf(t store.Template) (*Manifest, error) {
	if t.Kind != string(vm.KindMacOS) {
		return nil, errdefs.Invalidf("template %s is not a macOS template: only macOS templates have a guided setup", t.ID)
	}
	man, err := Resolve(or(t.Manifest, "macos-15-base"))
	if err != nil || man.MacOS == nil {
		return Builtin("macos-15-base")
	}
	return man, nil
}

// setupVM is a template booted for its guided setup and the host slot
// it holds.
type setupVM struct {
	mach    vm.Machine
	release func()
}

// guestHealth asks a running template's guest agent for its health_check.
func (m *Manager) guestHealth(ctx context.Context, mach vm.Machine) (protocol.HealthResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := guest.Connect(ctx, guest.Config{Dial: mach.DialGuest, Key: mach.GuestKey, Log: m.cfg.Log.With("vm", mach.Spec().ID)})
	if err != nil {
		return protocol.HealthResult{}, err
	}
	defer c.Close()
	return c.Health(ctx)
}

// checkGrants refuses to finish a setup whose guest agent does not answer
// or lacks a grant, naming what is missing (the guest's words, made
// printable).
func (m *Manager) checkGrants(ctx context.Context, mach vm.Machine) error {
	h, err := m.guestHealth(ctx, mach)
	if err != nil {
		return errdefs.Conflictf("the template's guest agent does not answer (%s): run install-agent.sh in the template's window, or finish with --force", files.Printable(err.Error()))
	}
	if h.OK {
		return nil
	}
	problems := make([]string, len(h.Problems))
	for i, p := range h.Problems {
		problems[i] = files.Printable(p)
	}
	return errdefs.Conflictf("the template's guest agent reports: %s. Grant what is missing in the template's window and finish again (or finish with --force)", strings.Join(problems, "; "))
}

// setupShutdownGrace is how long a template booted for its setup has to
// shut down after its guest agent began the shutdown.
const setupShutdownGrace = 90 * time.Second

// shutDown stops a template booted for its setup with its disk consistent:
// its guest agent (installed during the setup) is asked for a clean
// shutdown, which needs no Automation permission in the guest; the
// backend's own stop (RequestStop, then force) is the fallback.
func (m *Manager) shutDown(ctx context.Context, mach vm.Machine) error {
	ask := func(ctx context.Context) error {
		c, err := guest.Connect(ctx, guest.Config{Dial: mach.DialGuest, Key: mach.GuestKey, Log: m.cfg.Log.With("vm", mach.Spec().ID)})
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Shutdown(ctx)
	}
	how, err := vm.StopAs(ctx, mach, vm.Keep, ask, setupShutdownGrace)
	m.cfg.Log.Info("template shut down", "vm", mach.Spec().ID, "how", how, "err", err)
	return err
}

// SetupOptions say what Setup does.
type SetupOptions struct {
	// Finish shuts the template down and marks it ready, once its guest
	// agent's health_check reports every grant (Screen Recording,
	// Accessibility, the shared folder).
	Finish bool
	// Force finishes whatever the guest agent reports, or when it does
	// not answer.
	Force bool
}

// Setup boots a macOS template itself (not a clone) for its guided setup,
// with the guest agent kit in its shared folder (install/), and opens its
// window where the backend can; finishing asks the guest agent's
// health_check (a missing grant, or no answer, is a conflict that names
// what to do, unless forced), shuts the template down, removes the kit and
// marks the template ready with the kit's agent version.
func (m *Manager) Setup(ctx context.Context, id string, opt SetupOptions) (store.Template, error) {
	finish := opt.Finish
	t, err := m.cfg.Store.GetTemplate(ctx, id)
	if err != nil {
		return store.Template{}, err
	}
	man, err := m.manifestOf(t)
	if err != nil {
		return store.Template{}, err
	}
	if t.Status != store.TemplateSetup && t.Status != store.TemplateReady {
		return store.Template{}, errdefs.Conflictf("template %s is %s", id, t.Status)
	}
	shared := vm.Spec{Dir: m.dir(id)}.SharedDir()
	m.mu.Lock()
	running, isRunning := m.setups[id]
	m.mu.Unlock()
	if finish {
		if isRunning && !opt.Force {
			if err := m.checkGrants(ctx, running.mach); err != nil {
				return store.Template{}, err
			}
		}
		version, err := m.endSetup(ctx, id, t.AgentVersion)
		if err != nil {
			return store.Template{}, err
		}
		return m.cfg.Store.UpdateTemplate(ctx, id, func(t *store.Template) error {
			t.Status, t.StatusReason, t.AgentVersion = store.TemplateReady, "", version
			return nil
		})
	}
	if isRunning {
		return store.Template{}, errdefs.Conflictf("template %s is already running for its setup", id)
	}
	for _, v := range m.cfg.Pool.Snapshot() {
		if v.TemplateID == id && v.TaskID != "" {
			return store.Template{}, errdefs.Conflictf("template %s is in use by %s: set it up when no task runs on it", id, v.ID)
		}
	}
	if m.cfg.Backend == nil {
		return store.Template{}, errdefs.Unsupportedf("this helper cannot boot templates")
	}
	m.retireIdle(ctx, id, "its template is being set up")
	if err := stageKit(shared, man, m.cfg.AgentBinary); err != nil {
		return store.Template{}, err
	}
	if _, err := m.bootForSetup(ctx, t, man); err != nil {
		return store.Template{}, err
	}
	return m.cfg.Store.UpdateTemplate(ctx, id, func(t *store.Template) error {
		t.Status = store.TemplateSetup
		t.StatusReason = fmt.Sprintf("running for its guided setup (%d steps; the kit is in the shared folder's %s/); finish with: hivecrew templates setup %s --finish", len(man.MacOS.Setup), KitDir, id)
		return nil
	})
}

// bootForSetup boots template t itself (not a clone) outside the pool,
// holding a host VM slot until it stops, records it in m.setups and shows
// its window where the backend can.
func (m *Manager) bootForSetup(ctx context.Context, t store.Template, man *Manifest) (vm.Machine, error) {
	id := t.ID
	spec := vm.Spec{ID: "setup-" + id, Name: t.Name + " (setup)", Template: vm.Template{ID: id, Kind: vm.TemplateKind(t.Kind), Path: t.Path},
		Dir: m.dir(id), CPUs: t.CPUCount, MemoryMB: t.MemoryMB, DiskGB: t.DiskGB, Network: vm.NetworkInternet}
	if man.MacOS != nil {
		spec.DisplayWidth, spec.DisplayHeight = man.MacOS.Display.Width, man.MacOS.Display.Height
	}
	// The template runs outside the pool but takes a host VM slot (macOS
	// runs two macOS guests at most): the pool counts it.
	release, err := m.cfg.Pool.ReserveSlot(ctx, "the setup of template "+id, t.CPUCount, t.MemoryMB, nil)
	if err != nil {
		return nil, fmt.Errorf("wait for a VM slot: %w", err)
	}
	mach, err := m.cfg.Backend.Load(ctx, spec)
	if err != nil {
		release()
		return nil, fmt.Errorf("open the template: %w", err)
	}
	if err := mach.Start(ctx); err != nil {
		release()
		return nil, fmt.Errorf("boot the template: %w", err)
	}
	// Shut down from inside (the user's own choice): the slot is free.
	go func(exited <-chan struct{}) {
		<-exited
		release()
	}(mach.Exited())
	m.mu.Lock()
	m.setups[id] = setupVM{mach: mach, release: release}
	m.mu.Unlock()
	if d, ok := mach.(vm.Displayer); ok {
		if err := d.ShowDisplay(ctx, func() {}); err != nil {
			m.cfg.Log.Warn("show the template's window", "template", id, "err", err)
		}
	}
	return mach, nil
}

// endSetup shuts down the template booted for its setup (if it runs),
// lets go of its slot, removes the kit and returns the kit's agent
// version (was, if it cannot be read).
func (m *Manager) endSetup(ctx context.Context, id, was string) (string, error) {
	m.mu.Lock()
	running, isRunning := m.setups[id]
	m.mu.Unlock()
	if isRunning {
		if err := m.shutDown(ctx, running.mach); err != nil {
			return "", fmt.Errorf("shut the template down: %w", err)
		}
		running.release()
		m.mu.Lock()
		delete(m.setups, id)
		m.mu.Unlock()
	}
	os.RemoveAll(filepath.Join(vm.Spec{Dir: m.dir(id)}.SharedDir(), KitDir))
	if v, err := agentVersion(ctx, m.cfg.AgentBinary); err == nil {
		return v, nil
	}
	return was, nil
}
