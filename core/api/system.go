package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/template"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/wire"
)

func (a *API) listVMs(w http.ResponseWriter, r *http.Request) error {
	infos := a.cfg.Pool.Snapshot()
	slices.SortFunc(infos, func(x, y pool.Info) int { return x.Created.Compare(y.Created) })
	out := wire.VMList{VMs: make([]wire.VM, len(infos))}
	for i, v := range infos {
		vm := wire.VM{ID: v.ID, Backend: v.Backend, TemplateID: v.TemplateID, State: string(v.State), Reason: v.Reason,
			TaskID: v.TaskID, CPUCount: v.CPUs, MemoryMB: v.MemoryMB, Network: string(v.Network), Limits: vmLimits(v.Limits), CreatedAt: ts(v.Created),
			AgentVersion: v.AgentVersion, AgentOutdated: template.AgentOutdated(v.AgentVersion, a.cfg.Version)}
		if !v.LastUsed.IsZero() {
			lu := ts(v.LastUsed)
			vm.LastUsedAt = &lu
		}
		if v.TaskID != "" {
			if t, err := a.st.GetTask(r.Context(), v.TaskID); err == nil {
				vm.TaskTitle = t.Title
			}
		}
		out.VMs[i] = vm
	}
	if a.cfg.DevVMs != nil {
		for _, d := range a.cfg.DevVMs.List() {
			if i := slices.IndexFunc(out.VMs, func(v wire.VM) bool { return v.ID == d.ID }); i >= 0 {
				out.VMs[i].Developer, out.VMs[i].ScreenWidth, out.VMs[i].ScreenHeight = true, d.Screen.Width, d.Screen.Height
			}
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// vmLimits is the wire form of a VM's limits (nil before its first start).
func vmLimits(l vm.Limits) *wire.VMLimits {
	if l == (vm.Limits{}) {
		return nil
	}
	w := wire.VMLimits(l)
	return &w
}

// startVM: the pool starts VMs as tasks need them (and keeps the warm pool),
// so there is no stopped VM to start.
func (a *API) startVM(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	for _, v := range a.cfg.Pool.Snapshot() {
		if v.ID == id {
			return errdefs.Conflictf("vm %s is %s: VMs start with their task, and a stopped VM is removed", id, v.State)
		}
	}
	return errdefs.NotFoundf("vm %s not found", id)
}

// stopVM stops and removes a VM; the task it served fails with that
// reason. A developer VM is removed as Close does.
func (a *API) stopVM(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var err error
	if a.cfg.DevVMs != nil && a.cfg.DevVMs.Has(id) {
		err = a.cfg.DevVMs.Close(r.Context(), id)
	} else {
		err = a.cfg.Pool.Remove(r.Context(), id, "stopped by the user")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) status(w http.ResponseWriter, r *http.Request) error {
	counts, err := a.st.CountTasks(r.Context())
	if err != nil {
		return err
	}
	settings := a.cfg.Settings()
	out := wire.Status{
		Status: "healthy", Version: a.cfg.Version, Uptime: int64(time.Since(a.cfg.Started) / time.Second), Backend: a.cfg.Backend,
		Agents: wire.AgentCounts{Running: counts[store.StatusRunning], Paused: counts[store.StatusPaused],
			Queued: counts[store.StatusQueued] + counts[store.StatusWaitingForVM], MaxConcurrent: settings.MaxConcurrentVMs},
		Resources: wire.ResourceSummary{MemoryTotalGB: float64(vm.HostMemoryMB()) / 1024},
		Runtime:   runtimeStats(),
	}
	for _, v := range a.cfg.Pool.Snapshot() {
		switch v.State {
		case pool.StateBusy:
			out.VMs.Active++
		case pool.StateBooting, pool.StateSuspending:
			out.VMs.Pending++
		case pool.StateReady, pool.StateSuspended:
			out.VMs.Available++
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) systemConfig(w http.ResponseWriter, r *http.Request) error {
	s := a.cfg.Settings()
	ts, err := a.st.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, wire.SystemConfig{MaxConcurrentVMs: s.MaxConcurrentVMs, DefaultTimeoutMinutes: s.DefaultTimeoutMinutes,
		DefaultMaxIterations: s.DefaultMaxIterations, DefaultTemplateID: defaultTemplate(ts, s.DefaultTemplateID), APIPort: s.APIPort,
		WebURL: a.cfg.BaseURL})
}

func (a *API) stopAll(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	stopped, err := a.o.StopAll(r.Context())
	if err != nil {
		return err
	}
	if stopped == nil {
		stopped = []string{}
	}
	return writeJSON(w, http.StatusOK, wire.StopAll{Stopped: stopped, DurationMs: float64(time.Since(start).Microseconds()) / 1000})
}

func (a *API) getSettings(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, a.cfg.Settings())
}

func (a *API) patchSettings(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBytes))
	if err != nil {
		return err
	}
	// A safety setting sent unchanged (a form saves all its fields) needs
	// no step-up; one that changes does.
	var fields, current map[string]any
	settings := a.cfg.Settings()
	if json.Unmarshal(body, &fields) == nil {
		now, _ := json.Marshal(settings)
		json.Unmarshal(now, &current)
		for _, f := range safetySettings {
			if v, ok := fields[f]; ok && !reflect.DeepEqual(v, current[f]) {
				if err := requireStepUp(r, "Changing "+f); err != nil {
					return err
				}
			}
		}
	}
	// A patch that is refused is refused below, in its own words.
	if next, err := settings.Patch(body); err == nil {
		if err := a.stepUpForSearch(r, settings, next); err != nil {
			return err
		}
		if err := a.checkWorker(r, settings, next); err != nil {
			return err
		}
	}
	s, err := a.cfg.SaveSettings(r.Context(), body)
	if err != nil {
		return err
	}
	a.o.Kick()
	return writeJSON(w, http.StatusOK, s)
}

// checkWorker refuses a worker model whose provider does not exist, when
// the patch names one (by display name, any case, or ID, as providers are
// found everywhere).
func (a *API) checkWorker(r *http.Request, now, next config.Settings) error {
	if !next.HasWorker() || (next.WorkerProviderName == now.WorkerProviderName && next.WorkerModelID == now.WorkerModelID) {
		return nil
	}
	if _, err := a.st.FindProvider(r.Context(), next.WorkerProviderName); errors.Is(err, errdefs.ErrNotFound) {
		return errdefs.Invalidf("workerProviderName %q: there is no such provider (hivecrew providers ls lists them)", next.WorkerProviderName)
	} else if err != nil {
		return err
	}
	return nil
}

// safetySettings are the settings a web session changes only soon after
// its login link: what the agent may do, where it may reach, where its
// files land, and who may reach the helper.
var safetySettings = []string{"toolPolicy", "networkMode", "egressAllowHosts", "outputDirectory", "allowRemoteAccess", "apiPort"}

func apiKeyJSON(k store.APIKey) wire.APIKey {
	return wire.APIKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt}
}

func (a *API) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := a.st.ListAPIKeys(r.Context())
	if err != nil {
		return err
	}
	out := wire.APIKeyList{Keys: make([]wire.APIKey, len(keys))}
	for i, k := range keys {
		out.Keys[i] = apiKeyJSON(k)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if strings.TrimSpace(body.Name) == "" {
		return errdefs.Invalidf("name is required")
	}
	if err := requireStepUp(r, "Creating an API key"); err != nil {
		return err
	}
	key, rec, err := a.st.CreateAPIKey(r.Context(), strings.TrimSpace(body.Name))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, wire.CreatedAPIKey{APIKey: apiKeyJSON(rec), Key: key})
}

func (a *API) revokeAPIKey(w http.ResponseWriter, r *http.Request) error {
	if err := a.st.RevokeAPIKey(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// provisioning answers GET /provisioning: the variables (a secret one
// without its value), files and setup commands VMs are given.
func (a *API) provisioning(w http.ResponseWriter, r *http.Request) error {
	if a.cfg.Provisioning == nil {
		return writeJSON(w, http.StatusOK, wire.Provisioning{EnvironmentVariables: []wire.EnvironmentVariable{}, InjectedFiles: []wire.InjectedFile{}, SetupCommands: []wire.SetupCommand{}})
	}
	c, err := a.cfg.Provisioning.Get()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, c)
}

// setProvisioning answers PUT /provisioning: it replaces the whole
// configuration (a secret variable sent without a value keeps its stored
// one). Setup commands run in every VM, so a web session needs a fresh
// sign-in, as for credentials.
func (a *API) setProvisioning(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Changing the VM provisioning"); err != nil {
		return err
	}
	if a.cfg.Provisioning == nil {
		return errdefs.Unsupportedf("this helper has no provisioning store")
	}
	var in wire.Provisioning
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := a.knownTemplates(r.Context(), in); err != nil {
		return err
	}
	c, err := a.cfg.Provisioning.Put(in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, c)
}

// knownTemplates refuses provisioning scoped to a template that does not
// exist (by id or name): a typo would provision nothing, silently.
func (a *API) knownTemplates(ctx context.Context, in wire.Provisioning) error {
	scopes := provisioningScopes(in)
	ts, err := a.st.ListTemplates(ctx)
	if err != nil {
		return err
	}
	known := func(s string) bool {
		return slices.ContainsFunc(ts, func(t store.Template) bool { return t.ID == s || t.Name == s })
	}
	for _, s := range scopes {
		if !known(s) {
			names := make([]string, len(ts))
			for i, t := range ts {
				names[i] = t.Name
			}
			return errdefs.Invalidf("provisioning: there is no template %q (the templates: %s)", s, strings.Join(names, ", "))
		}
	}
	return nil
}

// usage answers GET /usage?since=RFC3339 (default: the start of today, in
// the helper's time zone): the tokens and cost of the tasks started since.
func (a *API) usage(w http.ResponseWriter, r *http.Request) error {
	now := time.Now()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return errdefs.Invalidf("since %q: want an RFC 3339 time such as 2026-11-26T00:00:00+01:00", v)
		}
		since = t
	}
	rows, err := a.st.UsageSince(r.Context(), since)
	if err != nil {
		return err
	}
	out := wire.Usage{Since: ts(since), Models: make([]wire.ModelUsage, len(rows))}
	for i, u := range rows {
		m := wire.ModelUsage{ProviderName: u.ProviderName, ModelID: u.ModelID, Tasks: u.Tasks, PromptTokens: u.PromptTokens,
			CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens, CostUSD: u.CostUSD}
		out.Models[i] = m
		out.Total.Tasks += m.Tasks
		out.Total.PromptTokens += m.PromptTokens
		out.Total.CompletionTokens += m.CompletionTokens
		out.Total.TotalTokens += m.TotalTokens
		out.Total.CostUSD += m.CostUSD
	}
	return writeJSON(w, http.StatusOK, out)
}

// runtimeStats reads the helper's goroutines, heap and open descriptors.
func runtimeStats() wire.RuntimeStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	open := -1
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(fds) - 1 // less the one ReadDir held
	} else if fds, err := os.ReadDir("/dev/fd"); err == nil {
		open = len(fds) - 1
	}
	return wire.RuntimeStats{Goroutines: runtime.NumGoroutine(), HeapAllocMB: float64(m.HeapAlloc) / (1 << 20), OpenFiles: open}
}
