package eval

import (
	"maps"
	"slices"
)

// ModelSummary compares one model over a run.
type ModelSummary struct {
	Model  string `json:"model"`
	Runs   int    `json:"runs"`
	Passes int    `json:"passes"`
	// Rate is Passes/Runs; Low and High its Wilson 95% interval.
	Rate    float64 `json:"rate"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
	CostUSD float64 `json:"costUSD"`
	// CostPerSuccess is the whole cost over the successes (nil with none).
	CostPerSuccess *float64 `json:"costPerSuccess,omitempty"`
	MeanSeconds    float64  `json:"meanSeconds"`
	MeanSteps      float64  `json:"meanSteps"`
	Tokens         int64    `json:"tokens"`
	// Failures counts the failed runs by category.
	Failures map[string]int `json:"failures"`
}

// TaskRow is one task of the report: a cell per model.
type TaskRow struct {
	Task  string `json:"task"`
	Cells []Cell `json:"cells"`
}

// Cell is one task's runs by one model. In JSON it leaves its results
// out: they are the record's results of that task and model.
type Cell struct {
	Model   string   `json:"model"`
	Passes  int      `json:"passes"`
	Runs    int      `json:"runs"`
	Results []Result `json:"-"`
}

// Summary is the report's data. In JSON (the helper's GET /evals/:id)
// it leaves the record out, which goes beside it.
type Summary struct {
	Record Record         `json:"-"`
	Models []ModelSummary `json:"models"`
	Tasks  []TaskRow      `json:"tasks"`
}

// Summarize compares the models of a run.
func Summarize(r Record) Summary {
	s := Summary{Record: r}
	models := slices.Clone(r.Models)
	tasks := slices.Clone(r.Tasks)
	for _, res := range r.Results {
		if !slices.Contains(models, res.Model) {
			models = append(models, res.Model)
		}
		if !slices.Contains(tasks, res.Task) {
			tasks = append(tasks, res.Task)
		}
	}
	for _, m := range models {
		ms := ModelSummary{Model: m, Failures: map[string]int{}}
		var secs, steps float64
		for _, res := range r.Results {
			if res.Model != m {
				continue
			}
			ms.Runs++
			ms.CostUSD += res.CostUSD
			ms.Tokens += res.Tokens
			secs += res.Seconds
			steps += float64(res.Steps)
			if res.Success {
				ms.Passes++
			} else {
				ms.Failures[res.Category]++
			}
		}
		if ms.Runs > 0 {
			ms.Rate = float64(ms.Passes) / float64(ms.Runs)
			ms.MeanSeconds, ms.MeanSteps = secs/float64(ms.Runs), steps/float64(ms.Runs)
		}
		ms.Low, ms.High = Wilson(ms.Passes, ms.Runs)
		if ms.Passes > 0 {
			c := ms.CostUSD / float64(ms.Passes)
			ms.CostPerSuccess = &c
		}
		s.Models = append(s.Models, ms)
	}
	for _, t := range tasks {
		row := TaskRow{Task: t}
		for _, m := range models {
			c := Cell{Model: m}
			for _, res := range r.Results {
				if res.Task == t && res.Model == m {
					c.Runs++
					if res.Success {
						c.Passes++
					}
					c.Results = append(c.Results, res)
				}
			}
			row.Cells = append(row.Cells, c)
		}
		s.Tasks = append(s.Tasks, row)
	}
	return s
}

// FailureNames lists a summary's failure categories in a stable order.
func (m ModelSummary) FailureNames() []string { return slices.Sorted(maps.Keys(m.Failures)) }
