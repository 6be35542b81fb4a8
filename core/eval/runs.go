package eval

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// States of a run (Brief.State).
const (
	// StateRunning: no end time, and results.json changed within
	// StaleAfter (Run touches it every Heartbeat).
	StateRunning = "running"
	// StateFinished: Run wrote its end time (all done, or interrupted
	// and said so).
	StateFinished = "finished"
	// StateInterrupted: no end time, and results.json unchanged for
	// longer than a live run leaves it (its process was killed).
	StateInterrupted = "interrupted"
)

// Heartbeat is how often Run touches its results.json while it runs;
// a run without an end time whose results.json is older than StaleAfter
// is no longer running.
const (
	Heartbeat  = 30 * time.Second
	StaleAfter = 4 * Heartbeat
)

// runIDPattern is the form of the ids Run gives: its UTC start time and
// four hex digits.
var runIDPattern = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{4}$`)

// ValidRunID reports whether id has the form of the ids Run gives
// (20260301-101500-ab12): nothing else names a run folder.
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

// Brief is a run summed up: what was asked, how far it got and how each
// model did. Err says why its results.json could not be read (then only
// ID and ModTime are set).
type Brief struct {
	ID                 string
	Suite, Provider    string
	Models             []string
	Repeat             int
	StartedAt, EndedAt time.Time
	// Tasks is the number of tasks run; Planned the runs asked for
	// (tasks × models × repeat) and Done the results so far.
	Tasks, Planned, Done, Passed int
	Problems                     int
	// SuiteTasks is how many tasks the suite has (the record's, or for an
	// older record the tasks run and those that could not).
	SuiteTasks int
	// Scores compares the models (Summarize's).
	Scores []ModelSummary
	// ModTime is when results.json last changed.
	ModTime time.Time
	Err     string
}

// State is the run's state at now (StateRunning, StateFinished or
// StateInterrupted); a run that cannot be read is never running.
func (b Brief) State(now time.Time) string {
	switch {
	case !b.EndedAt.IsZero():
		return StateFinished
	case b.Err == "" && now.Sub(b.ModTime) < StaleAfter:
		return StateRunning
	}
	return StateInterrupted
}

// brief sums up a record.
func brief(r Record, mod time.Time) Brief {
	s := Summarize(r)
	b := Brief{ID: r.ID, Suite: r.Suite, Provider: r.Provider, Models: slices.Clone(r.Models), Repeat: r.Repeat,
		StartedAt: r.StartedAt, EndedAt: r.EndedAt, Tasks: len(r.Tasks), Planned: len(r.Tasks) * len(r.Models) * max(r.Repeat, 1),
		Done: len(r.Results), Problems: len(r.Problems), Scores: s.Models, ModTime: mod,
		SuiteTasks: cmp.Or(r.SuiteTasks, len(r.Tasks)+len(r.Problems))}
	for _, m := range s.Models {
		b.Passed += m.Passes
	}
	return b
}

// Runs are the runs in an Evals folder (<data>/Evals), for the helper's
// API: listed newest first, read and removed by id. A run is a real
// folder named by a run id (ValidRunID): a symbolic link is not one, and
// every name is opened within the folder (os.Root), so no id reaches
// outside it. Briefs are kept while results.json is unchanged, so a page
// that polls the list does not parse every run again.
type Runs struct {
	dir string

	// mu guards cache: briefs by run id.
	mu    sync.Mutex
	cache map[string]Brief
}

// NewRuns returns the runs of an Evals folder; the folder need not exist.
func NewRuns(dir string) *Runs { return &Runs{dir: dir, cache: map[string]Brief{}} }

// openRoot opens the Evals folder; a missing one is nil, nil.
func (rs *Runs) openRoot() (*os.Root, error) {
	root, err := os.OpenRoot(rs.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eval runs: %w", err)
	}
	return root, nil
}

// ids lists the run folders, newest first.
func ids(root *os.Root) ([]string, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("eval runs: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("eval runs: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsDir() && ValidRunID(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out, nil
}

// List returns the newest limit runs and how many there are. A run whose
// results.json cannot be read is listed with its Err.
func (rs *Runs) List(limit int) ([]Brief, int, error) {
	root, err := rs.openRoot()
	if root == nil {
		return []Brief{}, 0, err
	}
	defer root.Close()
	all, err := ids(root)
	if err != nil {
		return nil, 0, err
	}
	shown := all[:min(limit, len(all))]
	out := make([]Brief, len(shown))
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i, id := range shown {
		out[i] = rs.cached(root, id)
	}
	for id := range rs.cache {
		if !slices.Contains(shown, id) {
			delete(rs.cache, id)
		}
	}
	return out, len(all), nil
}

// cached is a run's brief, read again when its results.json changed.
// rs.mu is held.
func (rs *Runs) cached(root *os.Root, id string) Brief {
	fi, err := root.Stat(path.Join(id, resultsFile))
	if err == nil {
		if b, ok := rs.cache[id]; ok && b.ModTime.Equal(fi.ModTime()) {
			return b
		}
	}
	b, _ := readBrief(root, id)
	rs.cache[id] = b
	return b
}

// Get returns a run's brief and its record (zero when the brief has
// Err). An id that is not a run id is invalid; a run that is not there
// (or is a symbolic link) is not found.
func (rs *Runs) Get(id string) (Brief, Record, error) {
	root, err := rs.run(id)
	if err != nil {
		return Brief{}, Record{}, err
	}
	defer root.Close()
	b, rec := readBrief(root, id)
	return b, rec, nil
}

// Remove deletes a run's folder. A running run (State) is a conflict
// unless force is set.
func (rs *Runs) Remove(id string, force bool, now time.Time) error {
	root, err := rs.run(id)
	if err != nil {
		return err
	}
	defer root.Close()
	if b, _ := readBrief(root, id); !force && b.State(now) == StateRunning {
		return errdefs.Conflictf("eval run %s is running (its results.json changed %s ago): stop `hivecrew eval run` first, or force the removal",
			id, now.Sub(b.ModTime).Round(time.Second))
	}
	if err := root.RemoveAll(id); err != nil {
		return fmt.Errorf("remove eval run %s: %w", id, err)
	}
	rs.mu.Lock()
	delete(rs.cache, id)
	rs.mu.Unlock()
	return nil
}

// run opens the Evals folder after checking that id names a run folder
// in it.
func (rs *Runs) run(id string) (*os.Root, error) {
	if !ValidRunID(id) {
		return nil, errdefs.Invalidf("eval run id %q: want the form 20260301-101500-ab12", id)
	}
	root, err := rs.openRoot()
	if err != nil {
		return nil, err
	}
	if root != nil {
		fi, err := root.Lstat(id)
		if err == nil && fi.IsDir() {
			return root, nil
		}
		root.Close()
	}
	return nil, errdefs.NotFoundf("eval run %s not found", id)
}

// readBrief reads a run's results.json and sums it up; what went wrong
// is the brief's Err.
func readBrief(root *os.Root, id string) (Brief, Record) {
	b := Brief{ID: id}
	f, err := root.OpenFile(path.Join(id, resultsFile), openResults, 0)
	if errors.Is(err, fs.ErrNotExist) {
		b.Err = "the run has no results.json"
		return b, Record{}
	}
	if err != nil {
		b.Err = err.Error()
		return b, Record{}
	}
	defer f.Close()
	rec, mod, err := decodeRecord(f)
	b.ModTime = mod
	switch {
	case err != nil:
		b.Err = err.Error()
		return b, Record{}
	case rec.ID != id:
		b.Err = fmt.Sprintf("results.json is of run %q, not of its folder %s", rec.ID, id)
		return b, Record{}
	}
	return brief(rec, mod), rec
}
