package template

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
)

// Pool is what the manager needs of the VM pool; *pool.Pool has it.
type Pool interface {
	Snapshot() []pool.Info
	// Remove stops and deletes a VM (the warm pool refills).
	Remove(ctx context.Context, id, reason string) error
	// Take removes a VM like Remove, but stops it first and runs keep on
	// the stopped machine before its folder is deleted.
	Take(ctx context.Context, id, reason string, keep func(vm.Machine) error) error
	// ReserveSlot holds a host VM slot for a machine outside the pool
	// (a macOS installer, a template booted for its setup) until release.
	ReserveSlot(ctx context.Context, what string, cpus, memMB int, onWait func(reason string)) (release func(), err error)
}

// Owner is a host account (the sandbox account, which is the guest's user
// inside a sandbox).
type Owner struct{ UID, GID int }

// Config configures a Manager. Store, Paths, Pool, Kinds, Settings,
// SaveSettings and Log are required.
type Config struct {
	Store *store.Store
	Paths config.Paths
	Pool  Pool
	// Kinds are the template kinds the VM backend runs; GuestOS its guests'.
	Kinds   []vm.TemplateKind
	GuestOS string
	// Backend boots a macOS template for its guided setup.
	Backend vm.Backend
	// CacheDir keeps downloads between builds; default DefaultCacheDir().
	CacheDir string
	// AgentBinary is the guest agent installed into new templates.
	AgentBinary string
	// GuestOwner, if set, is the account given the manifests' guestWritable
	// folders.
	GuestOwner *Owner
	// HostVersion is the helper's version (templates built with an older
	// agent are flagged).
	HostVersion string
	Settings    func() config.Settings
	// SaveSettings applies a settings patch (the default template).
	SaveSettings func(ctx context.Context, patch []byte) (config.Settings, error)
	// Changed, if set, is called after templates changed (the warm pool
	// follows the default template).
	Changed func(ctx context.Context) error
	Log     *slog.Logger
}

// CacheEnv overrides the download cache folder.
const CacheEnv = "HIVECREW_CACHE_DIR"

// MirrorEnv overrides the Debian mirror of every rootfs build.
const MirrorEnv = "HIVECREW_DEBIAN_MIRROR"

// DefaultCacheDir is $HIVECREW_CACHE_DIR, else the user's cache folder's
// hivecrew (~/.cache/hivecrew, ~/Library/Caches/hivecrew).
func DefaultCacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "hivecrew")
	}
	return filepath.Join(os.TempDir(), "hivecrew-cache")
}

// Manager builds, seals, edits and deletes templates. It is safe for
// concurrent use.
type Manager struct {
	cfg Config

	// buildMu serializes builds and seals (they share the cache and disk).
	buildMu sync.Mutex

	// mu guards jobs, setups, using and closed.
	mu   sync.Mutex
	jobs map[string]*job
	// setups are macOS templates booted for their guided setup.
	setups map[string]setupVM
	// using says what reads or writes a ready template's files
	// ("an export", "an agent update"), by template.
	using  map[string]string
	closed bool
	wg     sync.WaitGroup
	// ctx is the manager's lifetime: Close cancels every job.
	ctx    context.Context
	cancel context.CancelFunc
}

// job is one build or seal in progress.
type job struct {
	// parent is the template a seal copies from (it must stay meanwhile).
	parent string
	cancel context.CancelCauseFunc
	done   chan struct{}
	// mu guards progress.
	mu       sync.Mutex
	progress Progress
}

func (j *job) set(p Progress) {
	j.mu.Lock()
	j.progress = p
	j.mu.Unlock()
}

func (j *job) get() Progress {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.progress
}

// New returns a manager; call Recover before serving.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Paths.Home == "" || cfg.Pool == nil || cfg.Settings == nil || cfg.SaveSettings == nil || cfg.Log == nil {
		return nil, errors.New("template manager: Store, Paths, Pool, Settings, SaveSettings and Log are required")
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = DefaultCacheDir()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{cfg: cfg, jobs: map[string]*job{}, setups: map[string]setupVM{}, using: map[string]string{}, ctx: ctx, cancel: cancel}, nil
}

// Close cancels the builds in progress and waits for them to clean up,
// and shuts down templates booted for their setup.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	setups := m.setups
	m.setups = map[string]setupVM{}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	var errs []error
	for id, s := range setups {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := m.shutDown(ctx, s.mach)
		s.release()
		if err != nil {
			errs = append(errs, fmt.Errorf("shut down template %s: %w", id, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

// Recover ends what a previous helper left: templates still building are
// marked failed and their partial files removed.
func (m *Manager) Recover(ctx context.Context) error {
	m.cleanImports()
	ts, err := m.cfg.Store.ListTemplates(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Status != store.TemplateBuilding {
			continue
		}
		cleanPartial(m.dir(t.ID))
		if _, err := m.cfg.Store.UpdateTemplate(ctx, t.ID, func(t *store.Template) error {
			t.Status, t.StatusReason = store.TemplateFailed, "the helper stopped during the build; delete this template and create it again"
			return nil
		}); err != nil {
			return err
		}
		m.cfg.Log.Warn("template build interrupted by a helper restart", "template", t.ID)
	}
	return nil
}

// dir is a template's folder.
func (m *Manager) dir(id string) string { return filepath.Join(m.cfg.Paths.Templates(), id) }

// Progress returns the progress of a template's build or seal in
// progress.
func (m *Manager) Progress(id string) (Progress, bool) {
	m.mu.Lock()
	j, ok := m.jobs[id]
	m.mu.Unlock()
	if !ok {
		return Progress{}, false
	}
	return j.get(), true
}

// BuildLog returns the build log of a template.
func (m *Manager) BuildLog(ctx context.Context, id string) ([]byte, error) {
	if _, err := m.cfg.Store.GetTemplate(ctx, id); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(m.dir(id), "build.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errdefs.NotFoundf("template %s has no build log", id)
	}
	return b, err
}

// CreateRequest asks for a template built from a manifest.
type CreateRequest struct {
	// Manifest is a built-in manifest's name or an absolute folder.
	Manifest    string
	Name        string
	Description string
	Options     Options
	// Mirror overrides the manifest's Debian mirror.
	Mirror string
	// RestoreImage overrides a macOS manifest's restore image.
	RestoreImage string
	// Unattended (macOS) drives Setup Assistant and installs the guest
	// agent through the VM's console once macOS is installed
	// (setupUnattended); a template it cannot finish waits for its guided
	// setup.
	Unattended bool
}

// Create registers a new template (status building) and builds it in the
// background; the returned template is the registered one.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (store.Template, error) {
	man, err := Resolve(req.Manifest)
	if err != nil {
		return store.Template{}, err
	}
	kind := vm.TemplateKind(man.Kind)
	if !slices.Contains(m.cfg.Kinds, kind) {
		return store.Template{}, unsupportedKind(kind, m.cfg.GuestOS)
	}
	var flags []string
	switch kind {
	case vm.KindRootFS:
		if _, err := man.RootFS.PackageSet(req.Options); err != nil {
			return store.Template{}, err
		}
		if req.Mirror != "" {
			if err := checkMirror(req.Mirror); err != nil {
				return store.Template{}, errdefs.Invalidf("mirror: %v", err)
			}
		}
		if req.RestoreImage != "" {
			return store.Template{}, errdefs.Invalidf("restoreImage is for macOS templates")
		}
		if req.Unattended {
			return store.Template{}, errdefs.Invalidf("unattended is for macOS templates (Linux templates build without a person)")
		}
		flags = req.Options.Flags()
	case vm.KindMacOS:
		if req.Options.Full || len(req.Options.Extras) > 0 || req.Mirror != "" {
			return store.Template{}, errdefs.Invalidf("full, extras and mirror are for Linux templates")
		}
		if req.RestoreImage != "" {
			if err := CheckRestoreImage(req.RestoreImage); err != nil {
				return store.Template{}, errdefs.Invalidf("restoreImage: %v", err)
			}
		}
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		name = man.DisplayName
		if len(flags) > 0 {
			name += " (" + strings.Join(flags, ", ") + ")"
		}
	}
	t := store.Template{
		Name: name, Description: or(req.Description, man.Description), OS: man.OS, Kind: man.Kind,
		CPUCount: man.Resources.CPUs, MemoryMB: man.Resources.MemoryMB, DiskGB: man.Resources.DiskGB,
		Status: store.TemplateBuilding, Manifest: req.Manifest, ManifestVersion: man.Version, Options: flags,
		Version: 1,
	}
	t, err = m.register(ctx, t, man.Name, req.Name != "")
	if err != nil {
		return store.Template{}, err
	}
	spec := buildSpec{manifest: man, options: req.Options, mirror: req.Mirror, restoreImage: req.RestoreImage}
	m.start(t, func(ctx context.Context, j *job, log io.Writer) (result, error) {
		spec.dir, spec.cacheDir, spec.agent, spec.owner, spec.log = m.dir(t.ID), m.cfg.CacheDir, m.cfg.AgentBinary, m.cfg.GuestOwner, log
		spec.reserve = m.cfg.Pool.ReserveSlot
		if spec.mirror == "" {
			spec.mirror = os.Getenv(MirrorEnv)
		}
		switch kind {
		case vm.KindMacOS:
			if !req.Unattended {
				spec.track = newTracker(macosSpans, j.set)
				return buildMacOS(ctx, spec)
			}
			spec.track = newTracker(macosUnattendedSpans, j.set)
			res, err := buildMacOS(ctx, spec)
			if err != nil {
				return res, err
			}
			return m.setupUnattended(ctx, t, man, log, spec.track)
		default:
			spec.track = newTracker(rootfsSpans, j.set)
			return buildRootFS(ctx, spec)
		}
	})
	return t, nil
}

func unsupportedKind(kind vm.TemplateKind, guestOS string) error {
	switch kind {
	case vm.KindRootFS:
		return errdefs.Unsupportedf("this helper cannot run rootfs templates: they need the Linux sandbox backend with the helper running as root")
	case vm.KindMacOS:
		return errdefs.Unsupportedf("macOS templates need a Mac with Apple silicon (this helper runs %s guests)", or(guestOS, "other"))
	}
	return errdefs.Unsupportedf("this helper cannot run %q templates", kind)
}

var slugChars = regexp.MustCompile(`[^a-z0-9]+`)

// slug turns a name into an id: lower-case letters, digits and dashes.
func slug(s string) string {
	s = strings.Trim(slugChars.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return s
}

// register stores a new template under a free id (base, base-2, …) and,
// unless the name was the user's, a free name.
func (m *Manager) register(ctx context.Context, t store.Template, base string, userName bool) (store.Template, error) {
	ts, err := m.cfg.Store.ListTemplates(ctx)
	if err != nil {
		return store.Template{}, err
	}
	ids, names := map[string]bool{}, map[string]bool{}
	for _, o := range ts {
		ids[o.ID], names[o.Name] = true, true
	}
	if _, err := os.Stat(m.dir(base)); err == nil {
		ids[base] = true // a folder left by someone else
	}
	if names[t.Name] && userName {
		return store.Template{}, errdefs.Conflictf("a template named %q exists", t.Name)
	}
	base = or(slug(base), "template")
	id, name := base, t.Name
	for n := 2; ids[id] || dirExists(m.dir(id)); n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	for n := 2; names[name]; n++ {
		name = fmt.Sprintf("%s %d", t.Name, n)
	}
	t.ID, t.Name = id, name
	t.Path = templatePath(vm.TemplateKind(t.Kind), m.dir(id))
	if err := m.cfg.Store.CreateTemplate(ctx, t); err != nil {
		return store.Template{}, err
	}
	return m.cfg.Store.GetTemplate(ctx, id)
}

// templatePath is where a template's machines are cloned from.
func templatePath(kind vm.TemplateKind, dir string) string {
	if kind == vm.KindRootFS {
		return filepath.Join(dir, "rootfs")
	}
	return dir
}

func dirExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// result is what a finished build hands over.
type result struct {
	agentVersion string
	// status is the template's status once registered (ready, or setup).
	status string
	reason string
}

// start runs a build or seal of template t in the background.
func (m *Manager) start(t store.Template, work func(ctx context.Context, j *job, log io.Writer) (result, error)) {
	ctx, cancel := context.WithCancelCause(m.ctx)
	j := &job{parent: t.ParentID, cancel: cancel, done: make(chan struct{}), progress: Progress{Phase: PhaseQueued, Message: "waiting for another template build"}}
	m.mu.Lock()
	m.jobs[t.ID] = j
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		defer close(j.done)
		defer func() {
			m.mu.Lock()
			delete(m.jobs, t.ID)
			m.mu.Unlock()
			cancel(nil)
		}()
		log := m.cfg.Log.With("template", t.ID)
		m.buildMu.Lock()
		res, err := m.run(ctx, t, j, work)
		m.buildMu.Unlock()
		m.finish(ctx, t, res, err, log)
	}()
}

// run does one job with its build log open.
func (m *Manager) run(ctx context.Context, t store.Template, j *job, work func(ctx context.Context, j *job, log io.Writer) (result, error)) (result, error) {
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	if err := os.MkdirAll(m.dir(t.ID), 0o755); err != nil {
		return result{}, err
	}
	f, err := os.OpenFile(filepath.Join(m.dir(t.ID), "build.log"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return result{}, err
	}
	defer f.Close()
	log := &syncWriter{w: f}
	fmt.Fprintf(log, "# %s: template %s (%s) from %s, started %s\n", hostname(), t.ID, t.Name, or(t.Manifest, "VM "+t.SourceVMID), time.Now().UTC().Format(time.RFC3339))
	start := time.Now()
	res, err := work(ctx, j, log)
	if err != nil {
		fmt.Fprintf(log, "# failed after %s: %v\n", time.Since(start).Round(time.Second), err)
		return res, err
	}
	fmt.Fprintf(log, "# done in %s\n", time.Since(start).Round(time.Second))
	return res, nil
}

// finish records how a job ended.
func (m *Manager) finish(ctx context.Context, t store.Template, res result, err error, log *slog.Logger) {
	bg := context.Background()
	if err != nil {
		cleanPartial(m.dir(t.ID))
		if errors.Is(context.Cause(ctx), errDeleted) {
			return // deleted while building: Delete removes the rest
		}
		reason := err.Error()
		if ctx.Err() != nil {
			reason = "the helper stopped during the build; delete this template and create it again"
		}
		if _, uerr := m.cfg.Store.UpdateTemplate(bg, t.ID, func(t *store.Template) error {
			t.Status, t.StatusReason = store.TemplateFailed, reason
			return nil
		}); uerr != nil {
			log.Error("record a failed template build", "err", uerr)
		}
		log.Error("template build failed", "err", err)
		return
	}
	info := templateInfo{ID: t.ID, Name: t.Name, Manifest: t.Manifest, ManifestVersion: t.ManifestVersion, Options: t.Options,
		ParentID: t.ParentID, SourceVMID: t.SourceVMID, AgentVersion: res.agentVersion, Built: time.Now().UTC()}
	if werr := writeInfo(m.dir(t.ID), info); werr != nil {
		log.Warn("write template.json", "err", werr)
	}
	_, uerr := m.cfg.Store.UpdateTemplate(bg, t.ID, func(t *store.Template) error {
		t.Status, t.StatusReason, t.AgentVersion = or(res.status, store.TemplateReady), res.reason, res.agentVersion
		return nil
	})
	if uerr != nil {
		log.Error("register a built template", "err", uerr)
		return
	}
	log.Info("template ready", "status", or(res.status, store.TemplateReady), "agent", res.agentVersion)
	m.changed(bg)
}

// errDeleted is the cause of a job that Delete cancelled.
var errDeleted = errors.New("template deleted")

func (m *Manager) changed(ctx context.Context) {
	if m.cfg.Changed == nil {
		return
	}
	if err := m.cfg.Changed(ctx); err != nil {
		m.cfg.Log.Warn("apply a template change", "err", err)
	}
}

// templateInfo is template.json, the record next to a template's files.
type templateInfo struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Manifest        string   `json:"manifest,omitempty"`
	ManifestVersion int      `json:"manifestVersion,omitempty"`
	Options         []string `json:"options,omitempty"`
	ParentID        string   `json:"parentId,omitempty"`
	SourceVMID      string   `json:"sourceVmId,omitempty"`
	AgentVersion    string   `json:"agentVersion,omitempty"`
	// AgentPath is where an imported Linux template's guest agent is.
	AgentPath string `json:"agentPath,omitempty"`
	// ImportedFrom is the version of the helper that exported an
	// imported template.
	ImportedFrom string `json:"importedFrom,omitempty"`
	// AgentUpdated is when Update agent last installed the agent.
	AgentUpdated *time.Time `json:"agentUpdated,omitempty"`
	Built        time.Time  `json:"built"`
}

// cleanPartial removes what an unfinished build or seal left in a
// template's folder, keeping its build log.
func cleanPartial(dir string) {
	unmountLeftovers(dir)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".partial") || strings.HasSuffix(e.Name(), ".mnt") {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// syncWriter serializes writes to a build log.
type syncWriter struct {
	// mu guards w.
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func hostname() string {
	h, _ := os.Hostname()
	return or(h, "host")
}
