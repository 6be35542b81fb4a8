package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Failure categories of a result (Category); a success is "passed".
const (
	Passed         = "passed"
	CheckerFailed  = "checker failed"
	CheckerError   = "checker error"
	Timeout        = "timeout"
	MaxIterations  = "max iterations"
	ProviderError  = "provider error"
	VMError        = "VM error"
	SetupError     = "setup error"
	Cancelled      = "cancelled"
	resultsFile    = "results.json"
	maxResultsFile = 64 << 20
)

// Record is a run of a suite: what was asked and every result. It is the
// run's results.json.
type Record struct {
	ID        string    `json:"id"`
	Suite     string    `json:"suite"`
	SuiteDir  string    `json:"suiteDir"`
	Provider  string    `json:"provider"`
	Models    []string  `json:"models"`
	Repeat    int       `json:"repeat"`
	WebBase   string    `json:"webBase,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Tasks are the ids of the tasks run, in order.
	Tasks []string `json:"tasks"`
	// SuiteTasks is how many tasks the suite has, the ones run or not
	// (left out by --only, or Problems); 0 in records of older runs.
	SuiteTasks int       `json:"suiteTasks,omitempty"`
	Problems   []Problem `json:"problems,omitempty"`
	Results    []Result  `json:"results"`
}

// Result is one task run by one model once.
type Result struct {
	Task    string `json:"task"`
	Model   string `json:"model"`
	Attempt int    `json:"attempt"`
	// HelperTask is the helper's task id (its replay is
	// /tasks/HelperTask/replay), empty when the helper refused it.
	HelperTask string    `json:"helperTask,omitempty"`
	Status     string    `json:"status,omitempty"`
	Success    bool      `json:"success"`
	Category   string    `json:"category"`
	Detail     string    `json:"detail,omitempty"`
	Steps      int       `json:"steps"`
	Tokens     int64     `json:"tokens"`
	CostUSD    float64   `json:"costUSD"`
	Seconds    float64   `json:"seconds"`
	Checks     []Verdict `json:"checks,omitempty"`
}

// WriteRecord writes a run's results.json into dir atomically.
func WriteRecord(dir string, r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".results-*")
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write results: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, resultsFile)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// ReadRecord reads a run: a results.json file, or a run's folder.
func ReadRecord(p string) (Record, error) {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		p = filepath.Join(p, resultsFile)
	}
	f, err := os.OpenFile(p, openResults, 0)
	if err != nil {
		return Record{}, fmt.Errorf("read run: %w", err)
	}
	defer f.Close()
	r, _, err := decodeRecord(f)
	if err != nil {
		return r, fmt.Errorf("read run %s: %w", p, err)
	}
	return r, nil
}

// openResults opens a results.json for decodeRecord. O_NONBLOCK: a FIFO
// in its place opens at once (and is refused as not a regular file)
// rather than hold the reader until a writer comes.
const openResults = os.O_RDONLY | syscall.O_NONBLOCK

// decodeRecord reads a results.json: a regular file of at most
// maxResultsFile bytes. It returns the file's modification time too.
func decodeRecord(f *os.File) (Record, time.Time, error) {
	var r Record
	fi, err := f.Stat()
	if err != nil {
		return r, time.Time{}, err
	}
	switch {
	case !fi.Mode().IsRegular():
		return r, fi.ModTime(), errors.New("results.json is not a regular file")
	case fi.Size() > maxResultsFile:
		return r, fi.ModTime(), fmt.Errorf("results.json is %d MB, over the limit of %d MB", fi.Size()>>20, maxResultsFile>>20)
	}
	if err := json.NewDecoder(io.LimitReader(f, maxResultsFile)).Decode(&r); err != nil {
		return r, fi.ModTime(), fmt.Errorf("results.json is malformed: %w", err)
	}
	return r, fi.ModTime(), nil
}

// LatestRun returns the folder of the newest run under evals (run ids
// sort by time).
func LatestRun(evals string) (string, error) {
	entries, err := os.ReadDir(evals)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			if _, err := os.Stat(filepath.Join(evals, e.Name(), resultsFile)); err == nil {
				ids = append(ids, e.Name())
			}
		}
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("no eval run in %s: start one with `hivecrew eval run SUITE`", evals)
	}
	slices.Sort(ids)
	return filepath.Join(evals, ids[len(ids)-1]), nil
}

// Wilson returns the Wilson score interval at 95% of x successes in n
// trials (0, 0 for none).
func Wilson(x, n int) (low, high float64) {
	if n == 0 {
		return 0, 0
	}
	const z = 1.959963984540054
	nf, p := float64(n), float64(x)/float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, center-half), math.Min(1, center+half)
}
