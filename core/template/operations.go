package template

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
)

// SealRequest asks for a template made of a VM's disk.
type SealRequest struct {
	VMID        string
	Name        string
	Description string
}

// Seal makes a new template of a VM: the VM is taken out of the pool (a
// task it serves loses it), stopped, and its disk (sandbox: its root
// filesystem, the overlay's merged view; macOS: disk image and auxiliary
// storage) becomes the new template's. It returns the new template
// (status building) at once; the copy runs in the background.
func (m *Manager) Seal(ctx context.Context, req SealRequest) (store.Template, error) {
	info, ok := m.vm(req.VMID)
	if !ok {
		return store.Template{}, errdefs.NotFoundf("vm %s not found", req.VMID)
	}
	switch info.State {
	case pool.StateReady, pool.StateBusy:
	default:
		return store.Template{}, errdefs.Conflictf("vm %s is %s: only a running VM can be sealed", info.ID, info.State)
	}
	parent, err := m.cfg.Store.GetTemplate(ctx, info.TemplateID)
	if err != nil {
		return store.Template{}, fmt.Errorf("the template of vm %s: %w", info.ID, err)
	}
	kind := vm.TemplateKind(parent.Kind)
	switch kind {
	case vm.KindRootFS, vm.KindMacOS:
	default:
		return store.Template{}, errdefs.Unsupportedf("vm %s runs the %s template (kind %s), which has no disk of its own to seal", info.ID, parent.ID, parent.Kind)
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		name = parent.Name + " (sealed from " + info.ID + ")"
	}
	t := store.Template{
		Name: name, Description: or(req.Description, parent.Description), OS: parent.OS, Kind: parent.Kind,
		CPUCount: parent.CPUCount, MemoryMB: parent.MemoryMB, DiskGB: parent.DiskGB, AgentVersion: parent.AgentVersion,
		Status: store.TemplateBuilding, Manifest: parent.Manifest, ManifestVersion: parent.ManifestVersion, Options: parent.Options,
		Version: parent.Version + 1, SourceVMID: info.ID, ParentID: parent.ID,
	}
	t, err = m.register(ctx, t, "sealed-"+strings.TrimPrefix(info.ID, "vm-"), req.Name != "")
	if err != nil {
		return store.Template{}, err
	}
	dst := m.dir(t.ID)
	m.start(t, func(ctx context.Context, j *job, log io.Writer) (result, error) {
		track := newTracker(sealSpans, j.set)
		track.set(PhaseStop, 0, "stopping "+info.ID)
		fmt.Fprintf(log, "sealing vm %s (template %s)\n", info.ID, parent.ID)
		err := m.cfg.Pool.Take(ctx, info.ID, fmt.Sprintf("sealed into template %q", t.Name), func(mach vm.Machine) error {
			track.set(PhaseCopy, 0, "copying the disk of "+info.ID)
			return sealMachine(ctx, mach, dst, log, track)
		})
		if err != nil {
			return result{}, err
		}
		track.set(PhaseRegister, 1, "registered")
		return result{agentVersion: parent.AgentVersion}, nil
	})
	return t, nil
}

func (m *Manager) vm(id string) (pool.Info, bool) {
	for _, v := range m.cfg.Pool.Snapshot() {
		if v.ID == id {
			return v, true
		}
	}
	return pool.Info{}, false
}

// Patch changes a template; nil fields stay.
type Patch struct {
	Name        *string
	Description *string
	CPUCount    *int
	MemoryMB    *int
	DiskGB      *int
}

// Update edits a template's name, description or the resources of new
// VMs. Idle warm VMs of the template are replaced, so that new tasks get
// the new resources.
func (m *Manager) Update(ctx context.Context, id string, p Patch) (store.Template, error) {
	t, err := m.cfg.Store.UpdateTemplate(ctx, id, func(t *store.Template) error {
		var errs []string
		if p.Name != nil {
			if n := strings.TrimSpace(*p.Name); n == "" || len(n) > 200 {
				errs = append(errs, "name must be 1 to 200 characters")
			} else {
				t.Name = n
			}
		}
		if p.Description != nil {
			t.Description = strings.TrimSpace(*p.Description)
		}
		if p.CPUCount != nil {
			if *p.CPUCount < 0 || *p.CPUCount > 64 {
				errs = append(errs, "cpuCount must be 0 (default) to 64")
			}
			t.CPUCount = *p.CPUCount
		}
		if p.MemoryMB != nil {
			min := 512
			if t.Kind == string(vm.KindMacOS) {
				min = 2048
			}
			if *p.MemoryMB != 0 && (*p.MemoryMB < min || *p.MemoryMB > 1<<20) {
				errs = append(errs, fmt.Sprintf("memoryMB must be 0 (default) or %d to %d for this template", min, 1<<20))
			}
			t.MemoryMB = *p.MemoryMB
		}
		if p.DiskGB != nil {
			if *p.DiskGB != 0 && (*p.DiskGB < 8 || *p.DiskGB > 8192) {
				errs = append(errs, "diskGB must be 0 (default) or 8 to 8192")
			}
			t.DiskGB = *p.DiskGB
		}
		if len(errs) > 0 {
			return errdefs.Invalidf("%s", strings.Join(errs, "; "))
		}
		return nil
	})
	if err != nil {
		return store.Template{}, err
	}
	// The warm pool learns the new resources first, then the idle VMs that
	// have the old ones go.
	m.changed(ctx)
	if p.CPUCount != nil || p.MemoryMB != nil || p.DiskGB != nil {
		m.retireIdle(ctx, id, "its template's resources changed")
	}
	return t, nil
}

// retireIdle removes the idle (warm, or booting to be warm) VMs of a
// template; the warm pool refills with fresh clones.
func (m *Manager) retireIdle(ctx context.Context, templateID, reason string) {
	for _, v := range m.cfg.Pool.Snapshot() {
		if v.TemplateID == templateID && v.TaskID == "" && (v.State == pool.StateReady || v.State == pool.StateBooting) {
			if err := m.cfg.Pool.Remove(ctx, v.ID, reason); err != nil {
				m.cfg.Log.Warn("retire a warm VM", "vm", v.ID, "err", err)
			}
		}
	}
}

// Delete removes a template and its files. It is refused (conflict) while
// a VM runs a task on it; idle warm VMs of it are removed, and a build in
// progress is cancelled.
func (m *Manager) Delete(ctx context.Context, id string) error {
	t, err := m.cfg.Store.GetTemplate(ctx, id)
	if err != nil {
		return err
	}
	var busy []string
	for _, v := range m.cfg.Pool.Snapshot() {
		if v.TemplateID != id {
			continue
		}
		if v.TaskID != "" || v.State == pool.StateBusy {
			what := "a developer VM"
			if v.TaskID != "" {
				what = "task " + v.TaskID
			}
			busy = append(busy, fmt.Sprintf("%s (%s)", v.ID, what))
		}
	}
	if len(busy) > 0 {
		return errdefs.Conflictf("template %s is in use by %s: wait for the task to end or cancel it (remove a developer VM with hivecrew vms rm), then delete the template", id, strings.Join(busy, ", "))
	}
	m.mu.Lock()
	j, using := m.jobs[id], m.using[id]
	var sealing []string
	for child, other := range m.jobs {
		if other.parent == id {
			sealing = append(sealing, child)
		}
	}
	m.mu.Unlock()
	if using != "" {
		return errdefs.Conflictf("template %s is busy with %s: delete it when that is done", id, using)
	}
	if len(sealing) > 0 {
		return errdefs.Conflictf("template %s is being sealed from (into %s): delete it when that is done", id, strings.Join(sealing, ", "))
	}
	if j != nil {
		j.cancel(errDeleted)
		select {
		case <-j.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.retireIdle(ctx, id, "its template was deleted")
	if err := m.cfg.Store.DeleteTemplate(ctx, id); err != nil {
		return err
	}
	cleanPartial(m.dir(id))
	if err := os.RemoveAll(m.dir(id)); err != nil {
		m.cfg.Log.Warn("remove a deleted template's files", "template", id, "err", err)
	}
	if m.cfg.Settings().DefaultTemplateID == id {
		if _, err := m.cfg.SaveSettings(ctx, []byte(`{"defaultTemplateId":""}`)); err != nil {
			m.cfg.Log.Warn("clear the default template", "err", err)
		}
	}
	m.cfg.Log.Info("template deleted", "template", id, "name", t.Name)
	m.changed(ctx)
	return nil
}

// SetDefault makes a ready template the one tasks use by default.
func (m *Manager) SetDefault(ctx context.Context, id string) (store.Template, error) {
	t, err := m.cfg.Store.GetTemplate(ctx, id)
	if err != nil {
		return store.Template{}, err
	}
	if t.Status != store.TemplateReady {
		return store.Template{}, errdefs.Conflictf("template %s is %s, not ready", id, t.Status)
	}
	patch, _ := json.Marshal(map[string]string{"defaultTemplateId": id})
	if _, err := m.cfg.SaveSettings(ctx, patch); err != nil {
		return store.Template{}, err
	}
	return t, nil
}

// RebuildVM replaces an idle VM with a fresh clone of its template's
// current state (the warm pool refills). A VM serving a task is refused.
func (m *Manager) RebuildVM(ctx context.Context, id string) error {
	v, ok := m.vm(id)
	if !ok {
		return errdefs.NotFoundf("vm %s not found", id)
	}
	if v.TaskID != "" || v.State == pool.StateBusy {
		return errdefs.Conflictf("vm %s serves task %s: a VM is rebuilt when it is idle (every task gets a fresh clone anyway)", id, v.TaskID)
	}
	if v.State != pool.StateReady {
		return errdefs.Conflictf("vm %s is %s", id, v.State)
	}
	return m.cfg.Pool.Remove(ctx, id, "rebuilt from template "+v.TemplateID)
}

// Outdated reports whether a template or VM with this agent version is
// older than the helper.
func (m *Manager) Outdated(agentVersion string) bool {
	return AgentOutdated(agentVersion, m.cfg.HostVersion)
}

// Supports reports whether this helper can build templates of a manifest.
func (m *Manager) Supports(man *Manifest) bool {
	return slices.Contains(m.cfg.Kinds, vm.TemplateKind(man.Kind))
}
