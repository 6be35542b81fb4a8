package menubar

import (
	"context"
	"fmt"
	"slices"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// ResultSlots is how many finished tasks the Recent Results submenu lists.
const ResultSlots = 5

// ResultEntry is a finished task with output files, as Recent Results
// lists it: a click shows the folder its outputs were saved in.
type ResultEntry struct {
	TaskID, Label string
}

// ResultEntries are the finished tasks (newest first, as listed) that
// have output files, at most slots: "Quarterly summary — 2 files".
func ResultEntries(tasks []wire.TaskSummary, slots int) []ResultEntry {
	var out []ResultEntry
	for _, t := range tasks {
		if len(out) == slots {
			break
		}
		if t.OutputFileCount == nil || *t.OutputFileCount == 0 || !slices.Contains(finishedStatuses, t.Status) {
			continue
		}
		title := t.Title
		if r := []rune(title); len(r) > 40 {
			title = string(r[:39]) + "…"
		}
		files := "1 file"
		if n := *t.OutputFileCount; n != 1 {
			files = fmt.Sprintf("%d files", n)
		}
		out = append(out, ResultEntry{TaskID: t.ID, Label: title + " — " + files})
	}
	return out
}

// refreshResults lists the latest finished tasks with outputs in Recent
// Results.
func (m *Menu) refreshResults(ctx context.Context) {
	list, err := m.cfg.Client.ListTasks(ctx, client.TaskQuery{Statuses: finishedStatuses, Sort: "completedAt", Order: "desc", Limit: 20})
	if err != nil {
		m.cfg.Log.Warn("read finished tasks", "err", err)
		return
	}
	shown := ResultEntries(list.Tasks, ResultSlots)
	m.mu.Lock()
	for i := range m.shownResults {
		m.shownResults[i] = ""
		if i < len(shown) {
			m.shownResults[i] = shown[i].TaskID
		}
	}
	m.mu.Unlock()
	labels, tips := make([]string, len(shown)), make([]string, len(shown))
	for i, e := range shown {
		labels[i], tips[i] = e.Label, "Show the folder its outputs were saved in"
	}
	showIf(m.results, fillItems(m.resultItems[:], labels, tips))
}

// showResult shows the folder of the outputs of the task in slot i (the
// helper checks the path: core/reveal); without a saved output, its page.
func (m *Menu) showResult(i int) {
	m.mu.Lock()
	id := m.shownResults[i]
	m.mu.Unlock()
	if id == "" {
		return
	}
	ctx, cancel := m.ctx()
	defer cancel()
	files, err := m.cfg.Client.TaskFiles(ctx, id)
	if err != nil {
		m.notify(id, "Show in Folder", err.Error())
		return
	}
	for _, f := range files.OutputFiles {
		if f.SavedTo == "" {
			continue
		}
		if err := m.cfg.Client.OpenOutput(ctx, id, f.Name, true); err != nil {
			m.cfg.Log.Warn("show outputs", "task", id, "err", err)
			m.notify(id, "Show in Folder", err.Error())
		}
		return
	}
	m.open("/tasks/" + id) // nothing saved to a folder: its page has the downloads
}
