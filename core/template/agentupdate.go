package template

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
)

// templateRecord is the record a Linux build leaves inside the guest.
const templateRecord = "etc/hivecrew-template.json"

// UpdateAgent installs the helper's guest agent into a template and
// reseals it.
//
// A Linux template (rootfs) gets it for real: its idle VMs are retired
// (their overlays read the template's files), the agent binary is
// written beside the old one and renamed over it (a sealed template's
// files may be hard links to its parent's: the parent keeps its own), the
// record inside the guest and template.json say the new version, and the
// template's version goes up; new VMs boot with the new agent. Refused
// while a VM of the template serves a task.
//
// A macOS template cannot be written from outside the guest: the
// template is booted for its guided setup with the current agent kit in
// its shared folder (see templates/macos-15-base/README.md, "Updating the
// guest agent"); the user runs install-agent.sh in it and finishes the
// setup, which records the new version.
func (m *Manager) UpdateAgent(ctx context.Context, id string) (store.Template, error) {
	t, err := m.cfg.Store.GetTemplate(ctx, id)
	if err != nil {
		return store.Template{}, err
	}
	if t.Status != store.TemplateReady {
		return store.Template{}, errdefs.Conflictf("template %s is %s: the agent of a ready template is updated", id, t.Status)
	}
	switch vm.TemplateKind(t.Kind) {
	case vm.KindMacOS:
		return m.Setup(ctx, id, SetupOptions{})
	case vm.KindRootFS:
	default:
		return store.Template{}, errdefs.Unsupportedf("template %s (kind %s) has no guest agent of its own: its VMs run the helper's", id, t.Kind)
	}
	if m.cfg.AgentBinary == "" {
		return store.Template{}, errdefs.Unsupportedf("%v: start the helper with --guest-agent, or build it with make build", errNoAgent)
	}
	version, err := agentVersion(ctx, m.cfg.AgentBinary)
	if err != nil {
		return store.Template{}, err
	}
	release, err := m.use(id, "an agent update")
	if err != nil {
		return store.Template{}, err
	}
	defer release()
	if err := m.quiesce(ctx, id); err != nil {
		return store.Template{}, err
	}
	// While it is updated the template is not ready: the warm pool boots
	// no clone of it and no task gets one.
	if _, err := m.cfg.Store.UpdateTemplate(ctx, id, func(t *store.Template) error {
		t.Status, t.StatusReason = store.TemplateBuilding, "installing the guest agent "+version
		return nil
	}); err != nil {
		return store.Template{}, err
	}
	m.changed(ctx)
	t, err = m.installInto(ctx, t, version)
	if err != nil {
		// The files are whole (each is renamed into place): the template
		// is ready as it was, or with the new agent binary and the old
		// version recorded.
		if _, uerr := m.cfg.Store.UpdateTemplate(context.Background(), id, func(t *store.Template) error {
			t.Status, t.StatusReason = store.TemplateReady, ""
			return nil
		}); uerr != nil {
			err = errors.Join(err, uerr)
		}
		m.changed(context.Background())
		return store.Template{}, err
	}
	m.cfg.Log.Info("template agent updated", "template", id, "agent", version)
	m.changed(ctx)
	return t, nil
}

// installInto installs the agent of version into a rootfs template that
// no VM uses and records it.
func (m *Manager) installInto(ctx context.Context, t store.Template, version string) (store.Template, error) {
	// A VM may have booted before the template stopped being ready.
	if err := m.quiesce(ctx, t.ID); err != nil {
		return store.Template{}, err
	}
	if err := installAgent(m.dir(t.ID), m.agentPath(t), m.cfg.AgentBinary, version); err != nil {
		return store.Template{}, fmt.Errorf("update the agent of template %s: %w", t.ID, err)
	}
	info := m.readInfo(t.ID)
	now := stamp()
	info.ID, info.Name, info.AgentVersion, info.AgentUpdated = t.ID, t.Name, version, &now
	if info.Built.IsZero() {
		info.Built = t.CreatedAt
	}
	if err := writeInfo(m.dir(t.ID), info); err != nil {
		return store.Template{}, err
	}
	return m.cfg.Store.UpdateTemplate(ctx, t.ID, func(t *store.Template) error {
		t.Status, t.StatusReason, t.AgentVersion, t.Version = store.TemplateReady, "", version, t.Version+1
		return nil
	})
}

// quiesce retires a template's idle VMs and refuses while another VM of
// it runs or a seal copies from it.
func (m *Manager) quiesce(ctx context.Context, id string) error {
	var busy []string
	for _, v := range m.cfg.Pool.Snapshot() {
		if v.TemplateID != id || v.State == pool.StateStopped {
			continue
		}
		if v.TaskID == "" && v.State != pool.StateBusy {
			// Warm, suspended or failed: a fresh clone replaces it.
			if err := m.cfg.Pool.Remove(ctx, v.ID, "its template's guest agent is being updated"); err == nil || errors.Is(err, errdefs.ErrNotFound) {
				continue
			}
		}
		busy = append(busy, fmt.Sprintf("%s (%s)", v.ID, or(v.TaskID, string(v.State))))
	}
	if len(busy) > 0 {
		return errdefs.Conflictf("template %s is in use by %s: update its agent when no VM runs on it", id, strings.Join(busy, ", "))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for child, j := range m.jobs {
		if j.parent == id {
			return errdefs.Conflictf("template %s is being sealed from (into %s): update its agent when that is done", id, child)
		}
	}
	return nil
}

// installAgent writes the agent binary bin into the template folder dir's
// rootfs at agentPath and records version inside the guest. Every path
// is opened beneath the root filesystem (os.Root): a link the guest left
// cannot send a write outside it.
func installAgent(dir, agentPath, bin, version string) error {
	root, err := os.OpenRoot(path.Join(dir, "rootfs"))
	if err != nil {
		return err
	}
	defer root.Close()
	rel := strings.TrimPrefix(agentPath, "/")
	if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return err
	}
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := replaceFile(root, rel, 0o755, src); err != nil {
		return fmt.Errorf("install %s: %w", agentPath, err)
	}
	record := map[string]any{}
	if b, err := root.ReadFile(templateRecord); err == nil {
		json.Unmarshal(b, &record)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	record["agentVersion"] = version
	record["agentUpdated"] = stamp().Format("2006-01-02T15:04:05Z")
	b, err := json.MarshalIndent(record, "", "  ")
	if err != nil {
		return err
	}
	if err := root.MkdirAll("etc", 0o755); err != nil {
		return err
	}
	return replaceFile(root, templateRecord, 0o644, strings.NewReader(string(b)+"\n"))
}

// replaceFile writes r to a new file beside rel and renames it over rel,
// so that a hard link rel was part of keeps its old contents.
func replaceFile(root *os.Root, rel string, mode fs.FileMode, r io.Reader) error {
	tmp := path.Join(path.Dir(rel), ".hivecrew-update."+path.Base(rel))
	root.Remove(tmp)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}
