// Package writeback gives a task copies of folders of the user's computer
// (host folders, issue 20) and brings its agent's changes back only as the
// user approves them: a task given folders gets a copy of each in its VM
// (shared/folders/NAME); when it ends, what its agent changed there waits
// for the user's review (status writebackReview), and only what the user
// approves is written to the host, if the host file is still as the task
// found it.
//
// It owns the folders' life with a task: checking the folders a new task
// is granted (Grants), copying them in and keeping their manifests with
// the session (Stage), keeping and carrying them across a held task's VMs
// (Keep, Carry), the review of the changes when the VM has stopped
// (Review), and the user's answer (Reviews: Check, Resolve). It needs from
// its caller the helper's data folder (never a host folder, nor holding
// one: Fence), and, for Reviews, the task store (Store, which
// *store.Store satisfies) and a function that tells a task's watchers it
// changed. It guarantees that nothing reaches the host without the user's
// approval, that an approved change whose host file changed since the
// task started is a conflict and is not written, that two reviews are
// never applied at once, and that hidden files and links are never
// written back.
package writeback

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/hostfolders"
	"github.com/hivecrew/hivecrew/core/hostpath"
	"github.com/hivecrew/hivecrew/core/store"
)

// Grants checks the folders a new task is given; home is the helper's
// data folder (its database and secrets), never one of them.
func Grants(home string, paths []string) ([]store.HostFolder, error) {
	fence, err := Fence(home)
	if err != nil {
		return nil, err
	}
	gs, err := hostfolders.Grants(paths, hostpath.Self(), fence)
	if err != nil {
		return nil, err
	}
	out := make([]store.HostFolder, len(gs))
	for i, g := range gs {
		out[i] = store.HostFolder{Name: g.Name, Path: g.Path}
	}
	return out, nil
}

// Fence fences off the helper's data folder home (its sessions, tasks,
// VMs and their shared folders, templates, secrets): no host folder or
// output folder may be it, be inside it or hold it.
func Fence(home string) (hostpath.Fence, error) {
	return hostpath.NewFence(hostpath.Folder{Name: "the helper's data folder", Path: home})
}

// manifestsFile keeps what the granted folders held when the task started.
func manifestsFile(sessionDir string) string {
	return filepath.Join(sessionDir, "writeback", "manifests.json")
}

// Stage copies the task's host folders into its VM's shared folder and
// keeps their manifests with the session; home is the data folder.
func Stage(ctx context.Context, home string, t store.Task, shared, sessionDir string) error {
	if len(t.HostFolders) == 0 {
		return nil
	}
	fence, err := Fence(home)
	if err != nil {
		return err
	}
	var ms []hostfolders.Manifest
	for _, f := range t.HostFolders {
		m, err := hostfolders.Stage(ctx, hostfolders.Grant{Name: f.Name, Path: f.Path}, shared, hostfolders.Limits{}, fence)
		if err != nil {
			return fmt.Errorf("host folder %s: %w", f.Path, err)
		}
		ms = append(ms, m)
	}
	b, err := json.Marshal(ms)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(manifestsFile(sessionDir)), 0o700); err != nil {
		return err
	}
	return os.WriteFile(manifestsFile(sessionDir), b, 0o600)
}

// Prompt tells the agent where its copies of the host folders are.
func Prompt(t store.Task) []string {
	if len(t.HostFolders) == 0 {
		return nil
	}
	var names []string
	for _, f := range t.HostFolders {
		names = append(names, fmt.Sprintf("folders/%s (a copy of the user's %s)", f.Name, f.Path))
	}
	return []string{"Host folders: the user gave you copies of folders of their computer, in the shared folder: " + strings.Join(names, "; ") +
		". Work on them in place as the task asks. When you finish, the user reviews every file you added, changed or deleted there before it reaches their computer; " +
		"hidden files (names starting with a dot) and links are never written back."}
}

// Review compares the agent's copies of the host folders (in shared, the
// VM stopped) with their manifests, keeps the changed files with the
// session, and returns the changes for review (pending, or refused with
// the reason) and the events that say so; home is the data folder.
func Review(ctx context.Context, home string, t store.Task, sessionDir, shared string) (items []store.WritebackItem, events []store.Event) {
	if len(t.HostFolders) == 0 {
		return nil, nil
	}
	b, err := os.ReadFile(manifestsFile(sessionDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // the folders were never copied in (the task failed first)
	}
	var ms []hostfolders.Manifest
	if err == nil {
		err = json.Unmarshal(b, &ms)
	}
	if err != nil {
		return nil, []store.Event{{Type: "tool_call_result", ActivityType: "error", Summary: "Could not read what the host folders held: " + err.Error()}}
	}
	now := time.Now().UTC()
	for _, m := range ms {
		keep := filepath.Join(sessionDir, "writeback", m.Name)
		cs, err := hostfolders.Review(ctx, m, shared, keep, hostfolders.Limits{})
		if err != nil {
			events = append(events, store.Event{Type: "tool_call_result", ActivityType: "error",
				Summary: fmt.Sprintf("Could not review the changes to %s: %v", m.Path, err)})
			continue
		}
		for _, c := range cs {
			it := store.WritebackItem{ID: uuid.NewString(), TaskID: t.ID, Folder: m.Name, HostRoot: m.Path, Path: c.Path, Op: string(c.Op),
				Refused: c.Refused, State: store.WritebackPending, UpdatedAt: now}
			if c.Refused != "" {
				it.State = store.WritebackRefused
			}
			if c.Before != nil {
				it.BeforeSize, it.BeforeSHA, it.BeforeMode = &c.Before.Size, c.Before.SHA256, uint32(c.Before.Mode)
			}
			if c.After != nil {
				it.AfterSize, it.AfterSHA = &c.After.Size, c.After.SHA256
			}
			if c.Staged != "" {
				rel, _ := filepath.Rel(home, c.Staged)
				it.StagedPath = filepath.ToSlash(rel)
			}
			items = append(items, it)
		}
	}
	pending, refused := 0, 0
	for _, it := range items {
		if it.State == store.WritebackPending {
			pending++
		} else {
			refused++
		}
	}
	if refused > 0 {
		var lines []string
		for _, it := range items {
			if it.State == store.WritebackRefused {
				lines = append(lines, fmt.Sprintf("%s/%s (%s): %s", it.Folder, it.Path, it.Op, it.Refused))
			}
		}
		events = append(events, store.Event{Type: "tool_call_result", ActivityType: "error",
			Summary: fmt.Sprintf("%d change(s) to the host folders cannot be written back", refused), Details: strings.Join(lines, "\n")})
	}
	if pending > 0 {
		events = append(events, store.Event{Type: "tool_call_result", ActivityType: "info",
			Summary: fmt.Sprintf("%d change(s) to the host folders wait for your review", pending)})
	}
	return items, events
}

// itemChange is a stored change as hostfolders applies it.
func (r *Reviews) itemChange(it store.WritebackItem) (hostfolders.Manifest, hostfolders.Change) {
	c := hostfolders.Change{Path: it.Path, Op: hostfolders.Op(it.Op), Refused: it.Refused}
	if it.BeforeSize != nil {
		c.Before = &hostfolders.Entry{Size: *it.BeforeSize, SHA256: it.BeforeSHA, Mode: os.FileMode(it.BeforeMode)}
	}
	if it.AfterSize != nil {
		c.After = &hostfolders.Entry{Size: *it.AfterSize, SHA256: it.AfterSHA}
	}
	if it.StagedPath != "" {
		c.Staged = filepath.Join(r.cfg.Home, filepath.FromSlash(it.StagedPath))
	}
	return hostfolders.Manifest{Grant: hostfolders.Grant{Name: it.Folder, Path: it.HostRoot}}, c
}

// Items are a task's changes to its host folders.
func (r *Reviews) Items(ctx context.Context, id string) ([]store.WritebackItem, error) {
	return r.cfg.Store.WritebackItems(ctx, id)
}

// CheckWriteback says, for a pending change, how the host file changed
// since the task started (empty if it did not).
func (r *Reviews) Check(it store.WritebackItem) string {
	if it.State != store.WritebackPending {
		return it.Conflict
	}
	m, c := r.itemChange(it)
	root, err := os.OpenRoot(m.Path)
	if err != nil {
		return err.Error()
	}
	defer root.Close()
	if err := hostfolders.Check(root, c); err != nil {
		return err.Error()
	}
	return ""
}

// Resolve approves (writes to the host) or discards a task's
// pending changes: those of itemIDs, or all. An approved change whose host
// file changed since the task started is a conflict and is not written.
// Once none is pending, the task gets back the status its agent ended
// with, and its summary says what was applied.
func (r *Reviews) Resolve(ctx context.Context, id string, approve bool, itemIDs []string) (store.Task, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.cfg.Store.GetTask(ctx, id)
	if err != nil {
		return t, err
	}
	if t.Status != store.StatusWritebackReview {
		return t, errdefs.Conflictf("task %s is %s: it has no changes waiting for review", id, t.Status)
	}
	items, err := r.cfg.Store.WritebackItems(ctx, id)
	if err != nil {
		return t, err
	}
	for _, want := range itemIDs {
		if !slices.ContainsFunc(items, func(it store.WritebackItem) bool { return it.ID == want }) {
			return t, errdefs.NotFoundf("task %s has no change %q", id, want)
		}
	}
	fence, err := Fence(r.cfg.Home)
	if err != nil {
		return t, err
	}
	now := time.Now().UTC()
	var changed []store.WritebackItem
	var applied, failures []string
	conflicts := 0
	for _, it := range items {
		if it.State != store.WritebackPending || (len(itemIDs) > 0 && !slices.Contains(itemIDs, it.ID)) {
			continue
		}
		it.UpdatedAt = now
		if !approve {
			it.State = store.WritebackDiscarded
		} else {
			m, c := r.itemChange(it)
			switch err := hostfolders.Apply(m, c, fence); {
			case err == nil:
				it.State = store.WritebackApplied
				applied = append(applied, filepath.Join(it.HostRoot, filepath.FromSlash(it.Path)))
			case errors.Is(err, errdefs.ErrConflict):
				it.State, it.Conflict = store.WritebackConflict, err.Error()
				conflicts++
			default:
				// Not written, and still pending: the user may try again.
				failures = append(failures, err.Error())
			}
		}
		changed = append(changed, it)
	}
	final := map[string]string{}
	for _, it := range items {
		final[it.ID] = it.State
	}
	for _, it := range changed {
		final[it.ID] = it.State
	}
	left := 0
	for _, st := range final {
		if st == store.WritebackPending {
			left++
		}
	}
	var events []store.Event
	switch {
	case approve && len(applied) > 0:
		events = append(events, store.Event{Type: "status_change", ActivityType: "info",
			Summary: fmt.Sprintf("Wrote %d approved change(s) to the host folders", len(applied)), Details: strings.Join(applied, "\n")})
	case !approve && len(changed) > 0:
		events = append(events, store.Event{Type: "status_change", ActivityType: "info", Summary: fmt.Sprintf("Discarded %d change(s) to the host folders", len(changed))})
	}
	if conflicts > 0 {
		var lines []string
		for _, it := range changed {
			if it.State == store.WritebackConflict {
				lines = append(lines, it.Conflict)
			}
		}
		events = append(events, store.Event{Type: "status_change", ActivityType: "error",
			Summary: fmt.Sprintf("%d change(s) not written: the host files changed since the task started", conflicts), Details: strings.Join(lines, "\n")})
	}
	if len(failures) > 0 {
		events = append(events, store.Event{Type: "status_change", ActivityType: "error",
			Summary: fmt.Sprintf("Could not write %d change(s) to the host folders", len(failures)), Details: strings.Join(failures, "\n")})
	}
	t, _, err = r.cfg.Store.UpdateTask(ctx, id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status != store.StatusWritebackReview {
				return errdefs.Conflictf("task %s is %s", id, t.Status)
			}
			t.AppliedWritebackPaths = append(t.AppliedWritebackPaths, applied...)
			if left == 0 {
				t.Status, t.EndStatus = cmp.Or(t.EndStatus, store.StatusCompleted), ""
				summary := strings.TrimSpace(deref(t.ResultSummary) + "\n\n" + writebackSummary(final))
				t.ResultSummary = &summary
				events = append(events, store.Event{Type: "status_change", ActivityType: "info", Status: string(t.Status), Summary: "Review of the host folders done"})
			}
			return nil
		},
		Writeback: changed,
		Events:    events,
	})
	if err != nil {
		return t, err
	}
	r.cfg.Notify(id)
	if len(failures) > 0 {
		// Said to whoever approved; the changes stay pending.
		return t, errdefs.Unavailablef("could not write %d change(s) to the host folders: %s", len(failures), strings.Join(failures, "; "))
	}
	return t, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// writebackSummary says what the review of a task's changes came to, from
// their states by ID.
func writebackSummary(final map[string]string) string {
	n := map[string]int{}
	for _, st := range final {
		n[st]++
	}
	var parts []string
	for _, s := range []struct{ state, words string }{
		{store.WritebackApplied, "written to the host"}, {store.WritebackConflict, "not written (the host file had changed)"},
		{store.WritebackDiscarded, "discarded"}, {store.WritebackRefused, "refused (links, special files or hidden paths)"},
	} {
		if n[s.state] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s.state], s.words))
		}
	}
	return "Changes to the host folders: " + strings.Join(parts, ", ") + "."
}

// Keep copies a held task's copies of its host folders out of the VM it
// gives back (stopped, its shared folder shared) into carried, to be put
// in the next one.
func Keep(ctx context.Context, shared, carried string) error {
	return hostfolders.Keep(ctx, shared, filepath.Join(carried, hostfolders.Sub))
}

// Carry puts a held task's kept folders (in carried) into its fresh VM.
func Carry(carried, shared string) error {
	_, err := files.CarryInto(filepath.Join(carried, hostfolders.Sub), shared, hostfolders.Sub)
	return err
}

// Carried reports whether carried holds a held task's kept folders.
func Carried(carried string) bool {
	_, err := os.Lstat(filepath.Join(carried, hostfolders.Sub))
	return err == nil
}

// Pending counts the changes that wait for the user's review.
func Pending(items []store.WritebackItem) int {
	n := 0
	for _, it := range items {
		if it.State == store.WritebackPending {
			n++
		}
	}
	return n
}

// Store is the task store as Reviews use it; *store.Store is one.
type Store interface {
	GetTask(ctx context.Context, id string) (store.Task, error)
	WritebackItems(ctx context.Context, taskID string) ([]store.WritebackItem, error)
	UpdateTask(ctx context.Context, id string, u store.Update) (store.Task, []store.Event, error)
}

// Config configures Reviews; every field is required.
type Config struct {
	Store Store
	// Home is the helper's data folder.
	Home string
	// Notify tells a task's watchers that it changed.
	Notify func(taskID string)
}

// Reviews answers the user's review of tasks' changes to their host
// folders. It is safe for concurrent use.
type Reviews struct {
	cfg Config
	// mu keeps two reviews apart.
	mu sync.Mutex
}

// New returns the reviews of cfg.
func New(cfg Config) (*Reviews, error) {
	if cfg.Store == nil || cfg.Home == "" || cfg.Notify == nil {
		return nil, errors.New("writeback: Store, Home and Notify are required")
	}
	return &Reviews{cfg: cfg}, nil
}
