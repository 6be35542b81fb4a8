package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/hostpath"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/writeback"
)

// collectOutputs stops the run's VM and collects its outbox into out (the
// last stage of work). The outbox is read from a stopped VM: nothing in
// the guest can swap a FIFO or a link in under the collection, or hold it
// up. A stopped run (cancel, stop-all, helper stop) stops its VM at once
// and has a short deadline for what it collects; a finished one, a long
// one.
func (o *Orchestrator) collectOutputs(runCtx context.Context, j *job, lease *pool.Lease, out outcome) outcome {
	t, settings, dir := j.t, j.settings, j.tw.Dir()
	stopWithin, collectWithin := finishedStop, finishedCollect
	if j.r.ctx.Err() != nil || runCtx.Err() != nil {
		stopWithin, collectWithin = stoppedStop, stoppedCollect
	}
	collectFrom := func(shared string) {
		cctx, cancel := context.WithTimeout(background(), collectWithin)
		defer cancel()
		o.collect(cctx, t, dir, shared, settings, &out)
	}
	if lease == nil {
		// The VM was released while the task was held: the outbox it had
		// then was kept.
		collectFrom(carriedDir(dir))
		return out
	}
	shared := lease.Machine().Spec().SharedDir()
	lease.OnNotify(nil)
	lease.OnGuestReach(nil)
	collected := false
	err := lease.ReleaseAfter(stopWithin, func(vm.Machine) error {
		collected = true
		collectFrom(shared)
		return nil
	})
	if err != nil {
		o.cfg.Log.Error("stop VM before collecting outputs", "task", t.ID, "vm", lease.ID(), "err", err)
	}
	if !collected {
		// The pool let go of the VM already (it failed and is stopped): its
		// outbox, if still there, cannot change.
		collectFrom(shared)
	}
	return out
}

// outputLimits are the outbox caps of the settings (the package defaults
// where a setting is unset).
func outputLimits(s config.Settings) files.Limits {
	return files.Limits{MaxFileBytes: int64(s.MaxOutputFileMB) << 20, MaxTaskBytes: int64(s.MaxOutputTaskMB) << 20}
}

// copyInputs puts the task's input files into the VM's inbox.
func (o *Orchestrator) copyInputs(ctx context.Context, taskID, shared string) error {
	tf, err := o.cfg.Store.TaskFiles(ctx, taskID, store.FileInput)
	if err != nil {
		return err
	}
	ins := make([]files.Input, len(tf))
	for i, f := range tf {
		ins[i] = files.Input{Name: f.Name, Path: filepath.Join(o.cfg.Paths.Home, f.Path)}
	}
	return files.CopyIn(shared, ins)
}

// collect copies the outbox into the session's artifacts and the output
// directory, and adds the output files and any problems to out. Without
// the task's own output folder, its files go into a new folder of their
// own in the default one, named from the title and the time.
func (o *Orchestrator) collect(ctx context.Context, t store.Task, sessionDir, shared string, settings config.Settings, out *outcome) {
	items, events := writeback.Review(ctx, o.cfg.Paths.Home, t, sessionDir, shared)
	out.writeback, out.events = append(out.writeback, items...), append(out.events, events...)
	artifacts := filepath.Join(sessionDir, trace.ArtifactsDir)
	col, err := files.Collect(ctx, filepath.Join(shared, files.Outbox), artifacts, outputLimits(settings))
	if err != nil {
		out.events = append(out.events, store.Event{Type: "tool_call_result", ActivityType: "error", Summary: "Could not collect the whole outbox: " + err.Error()})
	}
	got := col.Collected
	var overCap, listed []string
	for _, s := range col.Skipped {
		listed = append(listed, s.Name+" ("+s.Reason+")")
		if s.TooLarge {
			overCap = append(overCap, s.Name+" ("+s.Reason+")")
		}
	}
	if col.SkippedCount > 0 {
		more := ""
		if n := col.SkippedCount - len(col.Skipped); n > 0 {
			more = fmt.Sprintf("; and %d more", n)
		}
		out.events = append(out.events, store.Event{Type: "tool_call_result", ActivityType: "error",
			Summary: fmt.Sprintf("%d outbox entries not collected", col.SkippedCount), Details: strings.Join(listed, "\n") + more})
	}
	if len(overCap) > 0 {
		// A size cap is the user's to change: the result says what it cost.
		out.summary = strings.TrimSpace(out.summary + fmt.Sprintf("\n\nNot collected, over the output size caps (Settings: maxOutputFileMB %d, maxOutputTaskMB %d): %s.",
			settings.MaxOutputFileMB, settings.MaxOutputTaskMB, strings.Join(overCap, "; ")))
	}
	if rest := col.SkippedCount - len(col.Skipped); rest > 0 || len(listed) > len(overCap) {
		out.summary = strings.TrimSpace(out.summary + fmt.Sprintf("\n\n%d outbox entries were not collected (hidden, unsafe names, links or special files; see the activity).", col.SkippedCount-len(overCap)))
	}
	now := time.Now().UTC()
	for _, c := range got {
		rel, _ := filepath.Rel(o.cfg.Paths.Home, c.Path)
		out.files = append(out.files, store.TaskFile{Kind: store.FileOutput, Name: c.Name, Size: c.Size,
			MimeType: files.MimeType(c.Name), Path: filepath.ToSlash(rel), CreatedAt: now})
	}
	if len(got) == 0 {
		return
	}
	dir := t.OutputDirectory
	if dir == "" {
		dir = filepath.Join(settings.OutputDirectory, files.TaskFolderName(t.Title, time.Now()))
	}
	placed, err := o.place(dir, got)
	first := len(out.files) - len(got)
	for i, p := range placed {
		out.files[first+i].SavedPath = p
	}
	if err != nil {
		out.events = append(out.events, store.Event{Type: "tool_call_result", ActivityType: "error", Summary: "Could not copy the results to " + dir + ": " + err.Error()})
		// Said where the user reads the result: the files are kept with
		// the session, and can be downloaded.
		out.summary = strings.TrimSpace(out.summary + fmt.Sprintf("\n\n%d of %d output file(s) could not be saved to %s (%v); they are kept with the task: `hivecrew files %s --all` downloads them.",
			len(got)-len(placed), len(got), dir, err, t.ID))
	}
	if len(placed) > 0 {
		out.events = append(out.events, store.Event{Type: "tool_call_result", ActivityType: "info",
			Summary: fmt.Sprintf("%d output file(s) saved to %s", len(placed), dir), Details: strings.Join(placed, "\n")})
	}
}

// place puts collected outputs in the output folder dir, opened now with
// every check made again: since the task was submitted another user may
// have made it, or put a link in its place.
func (o *Orchestrator) place(dir string, got []files.Collected) ([]string, error) {
	fence, err := writeback.Fence(o.cfg.Paths.Home)
	if err != nil {
		return nil, err
	}
	me := hostpath.Self()
	d, err := files.OpenOutputFolder(dir, me, fence)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return files.Place(d, me, got)
}
