package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/api"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/devvm"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/presets"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/scheduler"
	"github.com/hivecrew/hivecrew/core/secrets"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/template"
	"github.com/hivecrew/hivecrew/core/version"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/web"
	"github.com/hivecrew/hivecrew/core/webhooks"
	"github.com/hivecrew/hivecrew/core/writeback"
)

// core is what the helper runs once the store is open: the VM backend and
// pool, the orchestrator and the API.
type core struct {
	api     *api.API
	backend string
	failed  chan error // a background part that stopped for good
	stop    func() error
}

// settingsHolder keeps the current settings for everyone who asks.
type settingsHolder struct {
	st       *store.Store
	defaults config.Settings
	// mu guards cur and warm.
	mu   sync.Mutex
	cur  config.Settings
	warm vm.Template
	// warmCPUs and warmMemoryMB are the warm template's own resources (0:
	// the settings').
	warmCPUs, warmMemoryMB int
}

func (h *settingsHolder) get() config.Settings {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur.Clone()
}

func (h *settingsHolder) patch(ctx context.Context, patch []byte) (config.Settings, error) {
	s, err := h.st.PatchSettings(ctx, h.defaults, patch)
	if err != nil {
		return config.Settings{}, err
	}
	h.mu.Lock()
	h.cur = s
	h.mu.Unlock()
	if err := h.refreshWarm(ctx); err != nil {
		return config.Settings{}, err
	}
	return s.Clone(), nil
}

// refreshWarm resolves the template the warm pool keeps ready.
func (h *settingsHolder) refreshWarm(ctx context.Context) error {
	ts, err := h.st.ListTemplates(ctx)
	if err != nil {
		return err
	}
	s := h.get()
	// Only a ready template is kept warm (one still building has no files).
	ts = slices.DeleteFunc(ts, func(t store.Template) bool { return t.Status != "" && t.Status != store.TemplateReady })
	var pick *store.Template
	for i, t := range ts {
		if t.ID == s.DefaultTemplateID || (pick == nil && t.IsDefault) {
			pick = &ts[i]
		}
	}
	if pick == nil && len(ts) > 0 {
		pick = &ts[0]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.warm, h.warmCPUs, h.warmMemoryMB = vm.Template{}, 0, 0
	if pick != nil {
		h.warm = vm.Template{ID: pick.ID, Kind: vm.TemplateKind(pick.Kind), Path: pick.Path}
		h.warmCPUs, h.warmMemoryMB = pick.CPUCount, pick.MemoryMB
	}
	return nil
}

func (h *settingsHolder) limits() pool.Limits {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.cur
	warm := s.WarmPoolSize
	if h.warm.ID == "" {
		warm = 0
	}
	// Warm VMs get the warm template's resources, as a task's cold VM does.
	cpus, mem := s.VMCPUCount, s.VMMemoryMB
	if h.warmCPUs > 0 {
		cpus = h.warmCPUs
	}
	if h.warmMemoryMB > 0 {
		mem = h.warmMemoryMB
	}
	return pool.Limits{
		MaxConcurrent: s.MaxConcurrentVMs, WarmSize: warm, IdleTimeout: time.Duration(s.IdleTimeoutMinutes) * time.Minute,
		CPUs: cpus, MemoryMB: mem, DiskGB: s.VMDiskGB,
		WarmTemplate: h.warm, WarmNetwork: vm.NetworkMode(s.NetworkMode), AllowHosts: s.EgressAllowHosts,
	}
}

// recorder keeps the store's VM table in step with the pool.
type recorder struct{ st *store.Store }

func (r recorder) RecordVM(ctx context.Context, i pool.Info) error {
	v := store.VM{ID: i.ID, Name: i.Name, Backend: i.Backend, TemplateID: i.TemplateID, State: string(i.State), StateReason: i.Reason,
		CPUCount: i.CPUs, MemoryMB: i.MemoryMB, NetworkMode: string(i.Network), Dir: i.Dir, TaskID: i.TaskID, Limits: i.Limits.String(),
		AgentVersion: i.AgentVersion, CreatedAt: i.Created, UpdatedAt: time.Now().UTC()}
	if !i.LastUsed.IsZero() {
		lu := i.LastUsed
		v.LastUsedAt = &lu
	}
	return r.st.SaveVM(ctx, v)
}

func (r recorder) ForgetVM(ctx context.Context, id string) error { return r.st.DeleteVM(ctx, id) }

// startCore builds and starts the backend, pool, orchestrator and API.
func startCore(ctx context.Context, cfg Config, st *store.Store, defaults, settings config.Settings, baseURL string) (_ *core, err error) {
	log := cfg.Log
	var cleanups []func() error
	stop := func() error {
		var errs []error
		for i := len(cleanups) - 1; i >= 0; i-- {
			errs = append(errs, cleanups[i]())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, stop())
		}
	}()

	sec, err := secrets.Open(cfg.Paths, log)
	if err != nil {
		return nil, fmt.Errorf("open the secret store: %w", err)
	}
	backend := cfg.Backend
	if backend == nil {
		if backend, err = platformBackend(cfg); err != nil {
			return nil, fmt.Errorf("VM backend: %w", err)
		}
	}
	caps := backend.Capabilities()
	if err := seedTemplates(ctx, st, caps); err != nil {
		return nil, err
	}
	if err := removeOrphans(ctx, st, backend, cfg.Paths, log); err != nil {
		return nil, err
	}
	h := &settingsHolder{st: st, defaults: defaults, cur: settings}
	if err := h.refreshWarm(ctx); err != nil {
		return nil, err
	}
	p, err := pool.New(pool.Config{Backend: backend, Dir: cfg.Paths.VMs(), Limits: h.limits, Log: log, Recorder: recorder{st}})
	if err != nil {
		return nil, err
	}
	apiKey := func(pr store.Provider) (string, error) {
		if v, ok := secrets.EnvOverride(pr.DisplayName, os.Getenv); ok {
			return v, nil
		}
		v, err := sec.Get("provider/" + pr.ID)
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return "", err
		}
		return v, nil
	}
	hooks, err := webhooks.New(webhooks.Config{Hooks: webhookLoader(st, sec, log), Log: log, Backoff: cfg.WebhookBackoff})
	if err != nil {
		return nil, err
	}
	prov := provision.NewStore(cfg.Paths.Provisioning(), sec)
	orch, err := orchestrator.New(orchestrator.Config{Store: st, Pool: p, Paths: cfg.Paths, Settings: h.get, APIKey: apiKey, Secret: sec.Get,
		Provisioning: prov, Log: log, LLMBackoff: cfg.LLMBackoff, Notify: func(n orchestrator.Notice) { hooks.Notify(webhookPayload(n)) }})
	if err != nil {
		return nil, err
	}
	ps, err := presets.New(presets.Config{Store: st, Tasks: orch, Home: cfg.Paths.Home, Dir: cfg.Paths.Presets(), Log: log})
	if err != nil {
		return nil, err
	}
	sched, err := scheduler.New(scheduler.Config{Store: st, Tasks: orch, Home: cfg.Paths.Home, Log: log})
	if err != nil {
		return nil, err
	}
	wb, err := writeback.New(writeback.Config{Store: st, Home: cfg.Paths.Home, Notify: orch.NotifyChanged})
	if err != nil {
		return nil, err
	}
	if n, err := orch.Recover(ctx); err != nil {
		return nil, fmt.Errorf("recover tasks: %w", err)
	} else if n > 0 {
		log.Warn("tasks the previous helper left active were held, queued again or failed (see each task)", "count", n)
	}
	orch.ApplyRetentionNow(ctx) // then daily, below
	tm, err := templateManager(ctx, cfg, st, p, backend, h, orch)
	if err != nil {
		return nil, err
	}
	devs, err := devvm.New(devvm.Config{Pool: p, Templates: st, Settings: h.get, Log: log})
	if err != nil {
		tm.Close()
		return nil, err
	}
	a, err := api.New(api.Config{Store: st, Orchestrator: orch, Presets: ps, Scheduler: sched, Writeback: wb, Pool: p, Secrets: sec, Paths: cfg.Paths, Settings: h.get,
		SaveSettings: h.patch, APIKey: apiKey, Version: version.Version, Backend: caps.Name, BaseURL: baseURL,
		LLMBackoff: cfg.LLMBackoff, StepUpWindow: cfg.WebStepUp, PairingTTL: cfg.PairingTTL, MaxUploadBytes: cfg.MaxUploadBytes, Launch: cfg.Launch, Web: web.Handler(), Log: log,
		Templates: tm, DevVMs: devs, Webhooks: hooks, Provisioning: prov})
	if err != nil {
		tm.Close()
		return nil, err
	}

	c := &core{api: a, backend: caps.Name, failed: make(chan error, 2)}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(4)
	// Webhooks are delivered until the agents have stopped (their last
	// notices are queued by then), and given up with the helper.
	hooksCtx, hooksCancel := context.WithCancel(context.WithoutCancel(ctx))
	hooksDone := make(chan struct{})
	go func() {
		defer close(hooksDone)
		hooks.Run(hooksCtx)
	}()
	go func() {
		defer wg.Done()
		if err := p.Run(runCtx); err != nil && runCtx.Err() == nil {
			c.failed <- fmt.Errorf("VM pool: %w", err)
		}
	}()
	go func() {
		defer wg.Done()
		orch.RunRetention(runCtx, retentionEvery)
	}()
	go func() {
		defer wg.Done()
		sched.Run(runCtx)
	}()
	orchDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(orchDone)
		if err := orch.Run(runCtx); err != nil && runCtx.Err() == nil {
			c.failed <- fmt.Errorf("orchestrator: %w", err)
		}
	}()
	drain := cfg.DrainTimeout
	if drain == 0 {
		drain = 30 * time.Second
	}
	cleanups = append(cleanups, func() error {
		// Template builds first (they may hold a VM being sealed), then
		// developer VMs, then agents (recorded as interrupted), then every
		// VM.
		tm.Close()
		dctx, dcancel := context.WithTimeout(context.Background(), drain)
		defer dcancel()
		if err := devs.Shutdown(dctx); err != nil {
			log.Warn("remove developer VMs", "err", err)
		}
		cancel()
		<-orchDone
		hooksCancel()
		<-hooksDone
		err := p.Close(dctx)
		wg.Wait()
		if err != nil {
			return fmt.Errorf("stop VMs: %w", err)
		}
		return nil
	})
	c.stop = stop
	return c, nil
}

// seedTemplates registers the backend's built-in template when no template
// exists: on Linux the host's own root filesystem, read-only.
func seedTemplates(ctx context.Context, st *store.Store, caps vm.Capabilities) error {
	ts, err := st.ListTemplates(ctx)
	if err != nil || len(ts) > 0 {
		return err
	}
	for _, k := range caps.Kinds {
		if k == vm.KindHost {
			return st.SaveTemplate(ctx, store.Template{ID: "host", Name: "Host desktop", OS: caps.GuestOS, Kind: string(vm.KindHost),
				Description: "This machine's own system, read-only, with a private desktop, home and shared folder", IsDefault: true,
				AgentVersion: version.Version, Status: store.TemplateReady})
		}
	}
	return nil
}

// removeOrphans deletes what a previous helper left behind after a crash:
// every VM still in the store or with a folder under VMs/ (a VM that was
// still booting may have no record yet), and partial uploads.
func removeOrphans(ctx context.Context, st *store.Store, b vm.Backend, paths config.Paths, log *slog.Logger) error {
	rows, err := st.ListVMs(ctx)
	if err != nil {
		return err
	}
	orphans := map[string]store.VM{}
	for _, v := range rows {
		orphans[v.ID] = v
	}
	ents, err := os.ReadDir(paths.VMs())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read VM folder: %w", err)
	}
	for _, e := range ents {
		if _, ok := orphans[e.Name()]; !ok && e.IsDir() {
			orphans[e.Name()] = store.VM{ID: e.Name(), Dir: filepath.Join(paths.VMs(), e.Name())}
		}
	}
	for id, v := range orphans {
		if v.Dir == "" {
			v.Dir = filepath.Join(paths.VMs(), id)
		}
		tmpl := vm.Template{ID: v.TemplateID, Kind: vm.KindHost}
		if t, err := st.GetTemplate(ctx, v.TemplateID); err == nil {
			tmpl = vm.Template{ID: t.ID, Kind: vm.TemplateKind(t.Kind), Path: t.Path}
		}
		// Loading undoes what the backend left mounted; Delete removes the rest.
		m, err := b.Load(ctx, vm.Spec{ID: id, Name: v.Name, Template: tmpl, Dir: v.Dir, Network: vm.NetworkOffline})
		if err == nil {
			err = m.Delete(ctx)
		}
		if err != nil {
			log.Warn("delete a VM left by the previous helper", "vm", id, "err", err)
		}
		if err := os.RemoveAll(v.Dir); err != nil {
			log.Warn("remove a VM folder left by the previous helper", "vm", id, "err", err)
		}
		if err := st.DeleteVM(ctx, id); err != nil {
			return err
		}
		log.Info("removed a VM left by the previous helper", "vm", id)
	}
	// Uploads a crash cut short.
	if partial, err := filepath.Glob(filepath.Join(paths.Tasks(), ".upload-*")); err == nil {
		for _, p := range partial {
			os.RemoveAll(p)
		}
	}
	return nil
}

// retentionEvery is how often trace retention runs (also once at start).
const retentionEvery = 24 * time.Hour

// templateManager builds the template manager: it installs the helper's
// guest agent into new templates and gives the guest's folders to the
// sandbox account. A build interrupted by the previous helper is marked
// failed.
func templateManager(ctx context.Context, cfg Config, st *store.Store, p *pool.Pool, b vm.Backend, h *settingsHolder, orch *orchestrator.Orchestrator) (*template.Manager, error) {
	caps := b.Capabilities()
	agent, err := guestAgentPath(cfg)
	if err != nil {
		agent = "" // only template builds need it; they say so
		cfg.Log.Debug("no guest agent binary for template builds", "err", err)
	}
	var owner *template.Owner
	if acct, ok := b.(interface{ Account() (string, int) }); ok && os.Geteuid() == 0 {
		if name, uid := acct.Account(); uid > 0 {
			gid := uid
			if u, err := user.Lookup(name); err == nil {
				if g, err := strconv.Atoi(u.Gid); err == nil {
					gid = g
				}
			}
			owner = &template.Owner{UID: uid, GID: gid}
		}
	}
	tm, err := template.New(template.Config{Store: st, Paths: cfg.Paths, Pool: p, Kinds: caps.Kinds, GuestOS: caps.GuestOS, Backend: b,
		AgentBinary: agent, GuestOwner: owner, HostVersion: version.Version, Settings: h.get, SaveSettings: h.patch,
		Changed: func(ctx context.Context) error {
			err := h.refreshWarm(ctx)
			orch.Kick()
			return err
		},
		Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	if err := tm.Recover(ctx); err != nil {
		tm.Close()
		return nil, fmt.Errorf("recover templates: %w", err)
	}
	return tm, nil
}

// GuestAgentPath is the guest agent binary cfg's helper uses (see
// guestAgentPath); `hivecrew-helper paths` prints it.
func GuestAgentPath(cfg Config) (string, error) { return guestAgentPath(cfg) }

// guestAgentPath is the guest agent binary: the configured one, else
// hivecrew-guestagent next to the running executable (bin/ of a build),
// else in Hivecrew.app's Contents/Resources (the helper runs from
// Contents/Helpers/HivecrewHelper.app inside it).
func guestAgentPath(cfg Config) (string, error) {
	if cfg.GuestAgent != "" {
		return cfg.GuestAgent, nil
	}
	in, err := config.CurrentInstall()
	if err != nil {
		return "", fmt.Errorf("find the guest agent: %w", err)
	}
	return findGuestAgent(in)
}

// findGuestAgent looks for the guest agent where in's layout puts it.
func findGuestAgent(in config.Install) (string, error) {
	cands := in.GuestAgentCandidates()
	if p, ok := config.FirstExecutable(cands); ok {
		return p, nil
	}
	return "", fmt.Errorf("no guest agent binary at %s: build it with `make build` or pass --guest-agent", strings.Join(cands, " or "))
}
