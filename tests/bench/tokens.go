package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/llm"
)

// The token rows of the long task: prompt and completion tokens per step
// and the whole task's cost at reference prices, with and without a prompt
// cache, for each backend side by side. Costs are core/llm's
// (PriceTable.Cost), so the bench bills cache reads and writes as the
// helper does.

// chatCachedPerMTok is the chat rows' cached input price: a tenth of the
// input price, as the frontier vision models' list prices have it.
var chatCachedPerMTok = 0.30

// referencePrices are list prices, in dollars per million tokens: a
// frontier vision model's for the chat provider's "scripted" model,
// Claude Sonnet 4.5's (cache reads and writes at Anthropic's 0.1 and 1.25
// times input, the table's shares for type anthropic) and
// computer-use-preview's (cached input at half, the table's share for
// type openai).
var referencePrices = llm.PriceTable{
	"scripted":             {PromptPerMTok: 3, CompletionPerMTok: 15, CacheReadPerMTok: &chatCachedPerMTok},
	"claude-sonnet-4-5":    {PromptPerMTok: 3, CompletionPerMTok: 15},
	"computer-use-preview": {PromptPerMTok: 3, CompletionPerMTok: 12},
}

// backendRun is one backend's run of the long task: what each agent
// request (not the condensing or the completion check) used, as its
// provider counted it.
type backendRun struct {
	// label ends the backend's row names (" — anthropic"); "" keeps the
	// chat rows' names.
	label string
	// typ and model are the provider's type and model, for the prices.
	typ, model string
	usage      []llm.Usage
	// parts are each agent request's prompt by part.
	parts []promptParts
	// others are what the task's other requests used (condensing the
	// history, the completion check): part of its cost.
	others []llm.Usage
	// counted says how the provider counted the tokens (for the notes).
	counted string
	// summaries is how many times the history was condensed; took is the
	// task's time from its creation to its end.
	summaries int
	took      time.Duration
	// violation, when set, is what the run broke (a request the strict
	// server refused, a script it could not play, a task that did not
	// complete): every row of the backend fails with it.
	violation string
}

// backendRows are a backend's three token rows: prompt tokens per step,
// completion tokens per step, and the task's cost with the provider's
// prompt cache against the same without one. cacheNote says what the
// cache share is; target, when set, is the cost's target as a share of
// the uncached cost. A run without agent requests gets empty rows that
// fail.
func backendRows(b backendRun, cacheNote string, target float64) [3]Metric {
	names := [3]string{"tokens: prompt tokens per step (200-step task)", "tokens: completion tokens per step (200-step task)", "tokens: cost of the 200-step task with a prompt cache"}
	for i := range names {
		names[i] += b.label
	}
	_, known := referencePrices.Lookup(b.model)
	if len(b.usage) == 0 || !known {
		why := "no agent requests"
		if !known {
			why = "no reference price for " + b.model
		}
		var out [3]Metric
		for i, n := range names {
			out[i] = Metric{Name: n, Unit: "tokens", Violation: strings.TrimPrefix(b.violation+"; "+why, "; ")}
		}
		out[2].Unit = "USD"
		return out
	}
	var in, out []time.Duration
	var sum llm.Usage
	for _, u := range b.usage {
		in = append(in, Quantity(float64(u.Prompt)))
		out = append(out, Quantity(float64(u.Completion)))
		sum = sum.Add(u)
	}
	var other llm.Usage
	for _, u := range b.others {
		other = other.Add(u)
	}
	sum = sum.Add(other)
	withCache, _ := referencePrices.Cost(b.typ, b.model, sum)
	noCache, _ := referencePrices.Cost(b.typ, b.model, llm.Usage{Prompt: sum.Prompt, Completion: sum.Completion})
	i50, i95 := percentiles(in)
	o50, o95 := percentiles(out)
	run := ""
	if b.took > 0 {
		run = fmt.Sprintf("; the history condensed %d time%s; the task took %s", b.summaries, map[bool]string{true: "s"}[b.summaries != 1], b.took.Round(time.Second))
	}
	breakdown := ""
	if len(b.parts) > 0 {
		m := meanParts(b.parts)
		breakdown = fmt.Sprintf("; a step's prompt, mean %.0f tokens: %s; %.1f images a request", m.total(), m, float64(m.imageCount)/float64(len(b.parts)))
	}
	prompt := Metric{Name: names[0], P50: i50, P95: i95, Unit: "tokens", Samples: len(in), Violation: b.violation,
		Note: fmt.Sprintf("%d in all over %d agent requests%s; %s%s", sum.Prompt-other.Prompt, len(in), breakdown, b.counted, run)}
	completion := Metric{Name: names[1], P50: o50, P95: o95, Unit: "tokens", Samples: len(out), Violation: b.violation,
		Note: fmt.Sprintf("%d in all: a few sentences and one tool call a step", sum.Completion-other.Completion)}
	cost := Metric{Name: names[2], P50: Quantity(withCache), P95: Quantity(withCache), Unit: "USD", Samples: 1,
		Baseline: Quantity(noCache), BaselineName: "no prompt cache", Violation: b.violation,
		Note: fmt.Sprintf("%s at %s; with the task's %d other requests (condensing the history, the completion check: %d prompt tokens); %s", b.model, priceNote(b.typ, b.model), len(b.others), other.Prompt, cacheNote)}
	if target > 0 {
		cost.Target = Quantity(noCache * target)
		cost.Note += fmt.Sprintf("; target: at most %.0f%% of the uncached cost", 100*target)
	}
	return [3]Metric{prompt, completion, cost}
}

// priceNote says a model's reference prices, cache reads and writes as
// PriceTable.Cost bills them for the provider type.
func priceNote(typ, model string) string {
	perM := func(u llm.Usage) float64 { c, _ := referencePrices.Cost(typ, model, u); return c }
	const m = 1_000_000
	in, out := perM(llm.Usage{Prompt: m}), perM(llm.Usage{Completion: m})
	read, write := perM(llm.Usage{Prompt: m, CacheRead: m}), perM(llm.Usage{Prompt: m, CacheWrite: m})
	s := fmt.Sprintf("$%.2f/M input, $%.2f/M cached input", in, read)
	if write != in {
		s += fmt.Sprintf(", $%.2f/M cache writes", write)
	}
	return s + fmt.Sprintf(", $%.2f/M output", out)
}

// cacheShares says what share of a run's prompt tokens was read from the
// cache and written to it.
func cacheShares(b backendRun) (read, write float64) {
	var sum llm.Usage
	for _, u := range b.usage {
		sum = sum.Add(u)
	}
	if sum.Prompt == 0 {
		return 0, 0
	}
	return 100 * float64(sum.CacheRead) / float64(sum.Prompt), 100 * float64(sum.CacheWrite) / float64(sum.Prompt)
}

// sideBySide orders the backends' rows kind by kind: every backend's
// prompt tokens, then completion tokens, then cost.
func sideBySide(rows ...[3]Metric) []Metric {
	var out []Metric
	for kind := range 3 {
		for _, r := range rows {
			out = append(out, r[kind])
		}
	}
	return out
}

// violationOf says what a run broke (requests the server refused, turns
// it could not play, a task that did not complete): how many problems,
// and the first three, each cut at 300 bytes.
func violationOf(problems []string) string {
	if len(problems) == 0 {
		return ""
	}
	shown := make([]string, 0, 3)
	for _, p := range problems[:min(3, len(problems))] {
		if len(p) > 300 {
			p = p[:300] + "…"
		}
		shown = append(shown, p)
	}
	return fmt.Sprintf("%d problem(s): %s", len(problems), strings.Join(shown, "; "))
}
