package eval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// writeRun writes rec as a run folder of evals, its results.json
// modified at mod.
func writeRun(t *testing.T, evals string, rec Record, mod time.Time) {
	t.Helper()
	dir := filepath.Join(evals, rec.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, resultsFile), mod, mod); err != nil {
		t.Fatal(err)
	}
}

// TestRunsListNewestFirst: the list is the newest runs first, cut at the
// limit with the whole count; each sums up its results (planned, done,
// passes per model); a malformed run is listed with its error; folders
// not named as runs are, and symbolic links, are not runs.
func TestRunsListNewestFirst(t *testing.T) {
	evals := t.TempDir()
	now := time.Now()
	old := Record{ID: "20260301-100000-aaaa", Suite: "s", Models: []string{"a", "b"}, Repeat: 2, Tasks: []string{"t1", "t2"},
		EndedAt: now, Results: []Result{
			{Task: "t1", Model: "a", Success: true, Category: Passed},
			{Task: "t1", Model: "b", Category: CheckerFailed},
			{Task: "t2", Model: "a", Success: true, Category: Passed},
		}}
	writeRun(t, evals, old, now)
	writeRun(t, evals, Record{ID: "20260302-100000-bbbb", Suite: "s", Models: []string{"a"}, Tasks: []string{"t1"}}, now)
	if err := os.MkdirAll(filepath.Join(evals, "20260303-100000-cccc"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(evals, "20260303-100000-cccc", resultsFile), []byte(`{"id": "20260303-100000-cccc", "results": [`), 0o600)
	os.MkdirAll(filepath.Join(evals, "notes"), 0o700)
	os.WriteFile(filepath.Join(evals, "20260304-100000-dddd"), []byte("a file"), 0o600)
	outside := t.TempDir()
	writeRun(t, outside, Record{ID: "20260305-100000-eeee"}, now)
	if err := os.Symlink(filepath.Join(outside, "20260305-100000-eeee"), filepath.Join(evals, "20260305-100000-eeee")); err != nil {
		t.Fatal(err)
	}

	rs := NewRuns(evals)
	list, total, err := rs.List(2)
	if err != nil || total != 3 || len(list) != 2 {
		t.Fatalf("List(2): %d of %d, %v; want 2 of 3", len(list), total, err)
	}
	if list[0].ID != "20260303-100000-cccc" || list[0].Err == "" || list[1].ID != "20260302-100000-bbbb" || list[1].Err != "" {
		t.Fatalf("newest first, the malformed one with its error: %+v", list)
	}
	list, _, _ = rs.List(10)
	b := list[2]
	if b.ID != old.ID || b.Planned != 8 || b.Done != 3 || b.Passed != 2 || b.Tasks != 2 || b.State(now) != StateFinished {
		t.Fatalf("the old run: %+v", b)
	}
	if len(b.Scores) != 2 || b.Scores[0].Passes != 2 || b.Scores[0].Runs != 2 || b.Scores[1].Passes != 0 || b.Scores[1].Runs != 1 {
		t.Fatalf("scores per model: %+v", b.Scores)
	}
	if _, _, err := rs.Get("20260305-100000-eeee"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a symbolic link to a run elsewhere: %v; want not found", err)
	}
	// A FIFO in results.json's place is an error of that run, at once,
	// not a request held forever.
	fifo := filepath.Join(evals, "20260306-100000-ffff")
	os.MkdirAll(fifo, 0o700)
	if err := syscall.Mkfifo(filepath.Join(fifo, resultsFile), 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan Brief, 1)
	go func() { b, _, _ := rs.Get("20260306-100000-ffff"); got <- b }()
	select {
	case b := <-got:
		if !strings.Contains(b.Err, "not a regular file") {
			t.Errorf("a FIFO as results.json: %+v; want its error", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a FIFO as results.json held the read")
	}
	read := make(chan error, 1)
	go func() { _, err := ReadRecord(fifo); read <- err }()
	select {
	case err := <-read:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadRecord of a FIFO: %v; want its error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a FIFO as results.json held ReadRecord (hivecrew eval report)")
	}
	if l, n, err := NewRuns(filepath.Join(evals, "none")).List(5); err != nil || n != 0 || l == nil || len(l) != 0 {
		t.Errorf("no Evals folder: %v of %d, %v; want an empty list", l, n, err)
	}
}

// TestRunsSeeChanges: a run that gets a result is listed with it (the
// cache follows results.json), and its state follows the end time and
// the age of results.json.
func TestRunsSeeChanges(t *testing.T) {
	evals := t.TempDir()
	now := time.Now()
	rec := Record{ID: "20260301-100000-aaaa", Models: []string{"m"}, Tasks: []string{"t1", "t2"}, Repeat: 1}
	writeRun(t, evals, rec, now.Add(-time.Minute))
	rs := NewRuns(evals)
	list, _, _ := rs.List(10)
	if list[0].Done != 0 || list[0].State(now) != StateRunning {
		t.Fatalf("a fresh run: %+v, %s", list[0], list[0].State(now))
	}
	if got := list[0].State(now.Add(StaleAfter)); got != StateInterrupted {
		t.Errorf("a run unchanged for %s: %s; want %s", StaleAfter+time.Minute, got, StateInterrupted)
	}
	rec.Results = append(rec.Results, Result{Task: "t1", Model: "m", Success: true, Category: Passed})
	writeRun(t, evals, rec, now)
	list, _, _ = rs.List(10)
	if list[0].Done != 1 || list[0].Passed != 1 {
		t.Fatalf("after a result: %+v", list[0])
	}
	rec.EndedAt = now
	writeRun(t, evals, rec, now.Add(-time.Hour))
	if list, _, _ = rs.List(10); list[0].State(now) != StateFinished {
		t.Fatalf("an ended run: %s", list[0].State(now))
	}
}

// TestRemoveRefusesARunningRun: a running run is a conflict unless
// forced; an interrupted or finished one goes.
func TestRemoveRefusesARunningRun(t *testing.T) {
	evals := t.TempDir()
	now := time.Now()
	running := Record{ID: "20260301-100000-aaaa", Models: []string{"m"}}
	stale := Record{ID: "20260301-100000-bbbb", Models: []string{"m"}}
	writeRun(t, evals, running, now)
	writeRun(t, evals, stale, now.Add(-StaleAfter-time.Second))
	rs := NewRuns(evals)
	if err := rs.Remove(running.ID, false, now); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("removing a running run: %v; want a conflict", err)
	}
	if err := rs.Remove(stale.ID, false, now); err != nil {
		t.Fatalf("removing an interrupted run: %v", err)
	}
	if err := rs.Remove(running.ID, true, now); err != nil {
		t.Fatalf("forcing: %v", err)
	}
	if entries, _ := os.ReadDir(evals); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
	if err := rs.Remove(running.ID, true, now); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("removing it again: %v; want not found", err)
	}
}

// TestRunKeepsAHeartbeat: while a task runs, Run touches results.json,
// so a reader sees the run alive however long a task takes.
func TestRunKeepsAHeartbeat(t *testing.T) {
	s := suiteOf(t, 1)
	h := &fakeHelper{decide: func(in wire.CreateTask) (wire.Task, wire.CheckResult, map[string]string) {
		return wire.Task{Status: "completed"}, wire.CheckResult{}, map[string]string{"out.txt": "ok"}
	}}
	long := time.Now().Add(-time.Hour)
	var seen []time.Time
	evals := t.TempDir()
	_, _, err := Run(context.Background(), Config{Helper: h, Suite: s, Provider: "p", Models: []string{"m"}, Dir: evals,
		Poll: 300 * time.Millisecond, Heartbeat: 10 * time.Millisecond, Progress: func(p Progress) {
			entries, _ := os.ReadDir(evals)
			file := filepath.Join(evals, entries[0].Name(), resultsFile)
			if p.Last == nil {
				os.Chtimes(file, long, long) // as if the task had run an hour
				return
			}
			if fi, err := os.Stat(file); err == nil {
				seen = append(seen, fi.ModTime())
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !seen[0].After(long.Add(50*time.Minute)) {
		t.Fatalf("results.json's time when the task ended: %v; want touched since %v", seen, long)
	}
}
