package wire

import (
	"time"
)

// EvalRun is a run of an evaluation suite (`hivecrew eval run`), summed
// up from its results.json (extension: GET /evals). State is running,
// finished or interrupted (no end time, and results.json unchanged for
// longer than a live run leaves it); Planned is tasks × models × repeat,
// Done the results so far. A run whose results.json cannot be read has
// only its id, state, updatedAt and Error.
type EvalRun struct {
	ID        string     `json:"id"`
	Suite     string     `json:"suite"`
	Provider  string     `json:"provider"`
	Models    []string   `json:"models"`
	Repeat    int        `json:"repeat"`
	StartedAt *time.Time `json:"startedAt,omitempty"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	State     string     `json:"state"`
	TaskCount int        `json:"taskCount"`
	// SuiteTaskCount is how many tasks the suite has: TaskCount run, the
	// rest left out by --only or unreadable (Problems).
	SuiteTaskCount int         `json:"suiteTaskCount"`
	Planned        int         `json:"planned"`
	Done           int         `json:"done"`
	Passed         int         `json:"passed"`
	Scores         []EvalScore `json:"scores"`
	Problems       int         `json:"problems"`
	Error          string      `json:"error,omitempty"`
}

// EvalScore is how one model of an eval run did: Passes of Runs, Rate
// their ratio (0 to 1).
type EvalScore struct {
	Model  string  `json:"model"`
	Runs   int     `json:"runs"`
	Passes int     `json:"passes"`
	Rate   float64 `json:"rate"`
}

// EvalRunList is the answer of GET /evals: the newest runs first, Total
// of them in all; Truncated says the list stops short of Total.
type EvalRunList struct {
	Runs      []EvalRun `json:"runs"`
	Total     int       `json:"total"`
	Truncated bool      `json:"truncated"`
}
