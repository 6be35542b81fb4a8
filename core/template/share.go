package template

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/tmplarchive"
	"github.com/hivecrew/hivecrew/core/vm"
)

// defaultAgentPath is where a Linux template's guest agent is when nothing
// says otherwise (linux-desktop's agentPath).
const defaultAgentPath = "/usr/local/bin/hivecrew-guestagent"

// importPrefix begins the staging folder of an import in the templates
// folder; Recover removes what a crash left.
const importPrefix = ".import-"

// exportVersion matches a version an archive may carry.
var exportVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$`)

// Export writes a ready template as one archive to w (see tmplarchive):
// its manifest, its disk and their checksums. A template that is
// building, being set up or sealed from is refused.
func (m *Manager) Export(ctx context.Context, id string, w io.Writer) (tmplarchive.Manifest, error) {
	t, err := m.cfg.Store.GetTemplate(ctx, id)
	if err != nil {
		return tmplarchive.Manifest{}, err
	}
	if t.Status != store.TemplateReady {
		return tmplarchive.Manifest{}, errdefs.Conflictf("template %s is %s: only a ready template is exported", id, t.Status)
	}
	kind, err := archiveKind(t)
	if err != nil {
		return tmplarchive.Manifest{}, err
	}
	m.mu.Lock()
	_, settingUp := m.setups[id]
	m.mu.Unlock()
	if settingUp {
		return tmplarchive.Manifest{}, errdefs.Conflictf("template %s is running for its setup: finish it first", id)
	}
	root, err := os.OpenRoot(m.dir(id))
	if err != nil {
		return tmplarchive.Manifest{}, fmt.Errorf("open template %s: %w", id, err)
	}
	defer root.Close()
	guest := -1
	if m.cfg.GuestOwner != nil {
		guest = m.cfg.GuestOwner.UID
	}
	man := tmplarchive.Manifest{Name: t.Name, Description: t.Description, OS: t.OS, Kind: kind, CPUCount: t.CPUCount,
		MemoryMB: t.MemoryMB, DiskGB: t.DiskGB, AgentVersion: t.AgentVersion, Options: t.Options, Version: t.Version}
	if kind == tmplarchive.KindRootFS {
		man.AgentPath = m.agentPath(t)
	}
	if builtin(t.Manifest) {
		man.Manifest, man.ManifestVersion = t.Manifest, t.ManifestVersion
	}
	if exportVersion.MatchString(m.cfg.HostVersion) {
		man.ExportedBy = m.cfg.HostVersion
	}
	release, err := m.use(id, "an export")
	if err != nil {
		return tmplarchive.Manifest{}, err
	}
	defer release()
	man, stats, err := tmplarchive.Write(ctx, w, man, tmplarchive.Source{Root: root, Kind: kind, GuestUID: guest})
	if err != nil {
		return tmplarchive.Manifest{}, fmt.Errorf("export template %s: %w", id, err)
	}
	m.cfg.Log.Info("template exported", "template", id, "entries", stats.Entries, "skipped", stats.Skipped, "diskBytes", man.DiskBytes)
	return man, nil
}

// use marks a template's files as read or written by what (an export, an
// agent update) until release; a second use at once is a conflict.
func (m *Manager) use(id, what string) (release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if other, ok := m.using[id]; ok {
		return nil, errdefs.Conflictf("template %s is busy with %s: try again when it is done", id, other)
	}
	m.using[id] = what
	return func() {
		m.mu.Lock()
		delete(m.using, id)
		m.mu.Unlock()
	}, nil
}

// archiveKind is the archive kind of a template's files.
func archiveKind(t store.Template) (string, error) {
	switch vm.TemplateKind(t.Kind) {
	case vm.KindRootFS:
		return tmplarchive.KindRootFS, nil
	case vm.KindMacOS:
		return tmplarchive.KindMacOS, nil
	}
	return "", errdefs.Unsupportedf("template %s (kind %s) has no disk of its own to export", t.ID, t.Kind)
}

// builtin reports whether name is a manifest this helper ships.
func builtin(name string) bool { return slices.Contains(BuiltinNames(), name) }

// ImportRequest asks for a template read from an archive.
type ImportRequest struct {
	Archive io.Reader
	// Name replaces the archive's name (a clash with an existing
	// template's name is refused).
	Name string
}

// Import reads a template archive into a new, ready template. Everything
// is checked before anything is registered (tmplarchive.Open and
// Extract): the files are extracted into a staging folder inside the
// templates folder, and only once the whole archive checked out is the
// template registered and the folder renamed into place. A refused
// archive leaves nothing: the staging folder is removed.
func (m *Manager) Import(ctx context.Context, req ImportRequest) (store.Template, error) {
	a, err := tmplarchive.Open(req.Archive)
	if err != nil {
		return store.Template{}, err
	}
	defer a.Close()
	man := a.Manifest()
	kind := vm.TemplateKind(man.Kind)
	if man.Kind == tmplarchive.KindMacOS {
		kind = vm.KindMacOS
	}
	if !slices.Contains(m.cfg.Kinds, kind) {
		return store.Template{}, unsupportedKind(kind, m.cfg.GuestOS)
	}
	name := man.Name
	if strings.TrimSpace(req.Name) != "" {
		name = strings.TrimSpace(req.Name)
	}
	if err := tmplarchive.CheckName(name); err != nil {
		return store.Template{}, err
	}
	if err := m.nameFree(ctx, name); err != nil {
		return store.Template{}, err
	}
	staging, err := os.MkdirTemp(m.cfg.Paths.Templates(), importPrefix+"*.partial")
	if err != nil {
		return store.Template{}, fmt.Errorf("make the staging folder: %w", err)
	}
	t, err := m.importInto(ctx, a, man, kind, name, staging)
	if err != nil {
		if rerr := os.RemoveAll(staging); rerr != nil {
			m.cfg.Log.Warn("remove a refused import", "dir", staging, "err", rerr)
		}
		return store.Template{}, err
	}
	m.cfg.Log.Info("template imported", "template", t.ID, "name", t.Name, "agent", t.AgentVersion)
	m.changed(ctx)
	return t, nil
}

// nameFree refuses a name an existing template has.
func (m *Manager) nameFree(ctx context.Context, name string) error {
	ts, err := m.cfg.Store.ListTemplates(ctx)
	if err != nil {
		return err
	}
	for _, o := range ts {
		if o.Name == name {
			return errdefs.Conflictf("a template named %q exists (%s): import under another name", name, o.ID)
		}
	}
	return nil
}

// importInto extracts and checks the archive in staging, then registers
// the template and renames staging into its folder.
func (m *Manager) importInto(ctx context.Context, a *tmplarchive.Archive, man tmplarchive.Manifest, kind vm.TemplateKind, name, staging string) (store.Template, error) {
	root, err := os.OpenRoot(staging)
	if err != nil {
		return store.Template{}, err
	}
	defer root.Close()
	target := tmplarchive.Target{Root: root, Chown: os.Geteuid() == 0}
	if m.cfg.GuestOwner != nil {
		target.Guest = &tmplarchive.Owner{UID: m.cfg.GuestOwner.UID, GID: m.cfg.GuestOwner.GID}
	}
	if err := a.Extract(ctx, target); err != nil {
		return store.Template{}, fmt.Errorf("import %q: %w", name, err)
	}
	if kind == vm.KindRootFS {
		if err := root.Chmod("rootfs", 0o755); err != nil {
			return store.Template{}, err
		}
	}
	t := store.Template{Name: name, Description: man.Description, OS: man.OS, Kind: string(kind), CPUCount: man.CPUCount,
		MemoryMB: man.MemoryMB, DiskGB: man.DiskGB, AgentVersion: man.AgentVersion, Status: store.TemplateReady,
		Options: man.Options, Version: max(man.Version, 1)}
	if builtin(man.Manifest) {
		t.Manifest, t.ManifestVersion = man.Manifest, man.ManifestVersion
	}
	// The build lock keeps a build from taking the id between the
	// registration and the rename.
	m.buildMu.Lock()
	defer m.buildMu.Unlock()
	t, err = m.register(ctx, t, name, true)
	if err != nil {
		return store.Template{}, err
	}
	info := templateInfo{ID: t.ID, Name: t.Name, Manifest: t.Manifest, ManifestVersion: t.ManifestVersion, Options: t.Options,
		AgentVersion: t.AgentVersion, AgentPath: man.AgentPath, ImportedFrom: man.ExportedBy, Built: man.ExportedAt}
	err = writeInfo(staging, info)
	if err == nil {
		err = os.Rename(staging, m.dir(t.ID))
	}
	if err != nil {
		if derr := m.cfg.Store.DeleteTemplate(context.Background(), t.ID); derr != nil {
			err = errors.Join(err, fmt.Errorf("unregister the template: %w", derr))
		}
		return store.Template{}, fmt.Errorf("put the imported template in place: %w", err)
	}
	return t, nil
}

// writeInfo writes template.json in dir.
func writeInfo(dir string, info templateInfo) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "template.json"), append(b, '\n'), 0o644)
}

// readInfo reads a template's template.json (zero when it has none).
func (m *Manager) readInfo(id string) templateInfo {
	var info templateInfo
	if b, err := os.ReadFile(filepath.Join(m.dir(id), "template.json")); err == nil {
		json.Unmarshal(b, &info)
	}
	return info
}

// agentPath is where a Linux template's guest agent is installed: as its
// import recorded, else as its manifest says, else linux-desktop's path.
func (m *Manager) agentPath(t store.Template) string {
	if p := m.readInfo(t.ID).AgentPath; p != "" && checkGuestPath(p) == nil {
		return p
	}
	if t.Manifest != "" {
		if man, err := Resolve(t.Manifest); err == nil && man.RootFS != nil {
			return man.RootFS.AgentPath
		}
	}
	return defaultAgentPath
}

// cleanImports removes the staging folders of imports a crash cut short.
func (m *Manager) cleanImports() {
	ents, _ := os.ReadDir(m.cfg.Paths.Templates())
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), importPrefix) && strings.HasSuffix(e.Name(), ".partial") {
			if err := os.RemoveAll(filepath.Join(m.cfg.Paths.Templates(), e.Name())); err != nil {
				m.cfg.Log.Warn("remove an interrupted import", "dir", e.Name(), "err", err)
			}
		}
	}
}

// stamp is the time recorded for an update.
func stamp() time.Time { return time.Now().UTC().Truncate(time.Second) }
