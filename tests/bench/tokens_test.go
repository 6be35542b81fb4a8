package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/llm"
)

// TestTokenRowsSideBySide: each backend's rows bill its usage as the
// helper does (cache reads at 0.1x and writes at 1.25x of input for
// Anthropic, cached input at half for OpenAI, the chat rows' own cached
// price), against the same tokens without a cache; the chat rows keep
// their names and target, the others carry their backend's name, and
// the rows go kind by kind.
func TestTokenRowsSideBySide(t *testing.T) {
	// A thousand steps of 10,000 prompt tokens (8,000 of them read from a
	// cache, 1,000 written to Claude's) and 100 completion tokens.
	var openAI, claudeUse []llm.Usage
	for range 1000 {
		openAI = append(openAI, llm.Usage{Prompt: 10_000, Completion: 100, CacheRead: 8_000})
		claudeUse = append(claudeUse, llm.Usage{Prompt: 10_000, Completion: 100, CacheRead: 8_000, CacheWrite: 1_000})
	}
	chat := backendRows(backendRun{typ: llm.TypeOpenAICompatible, model: "scripted", usage: openAI}, "chat cache", 0.6)
	claude := backendRows(backendRun{label: " — anthropic", typ: llm.TypeAnthropic, model: "claude-sonnet-4-5", usage: claudeUse, took: time.Minute, summaries: 2}, "claude cache", 0)
	cua := backendRows(backendRun{label: " — openai", typ: llm.TypeOpenAI, model: "computer-use-preview", usage: openAI}, "cua cache", 0)
	for _, c := range []struct {
		rows           [3]Metric
		name           string
		cost, baseline float64
		prices         string
	}{
		{chat, "tokens: cost of the 200-step task with a prompt cache", (2_000*3 + 8_000*0.30 + 100*15) / 1e3, (10_000*3 + 100*15) / 1e3,
			"$3.00/M input, $0.30/M cached input, $15.00/M output"},
		{claude, "tokens: cost of the 200-step task with a prompt cache — anthropic", (1_000*3 + 8_000*0.30 + 1_000*3.75 + 100*15) / 1e3, (10_000*3 + 100*15) / 1e3,
			"$3.00/M input, $0.30/M cached input, $3.75/M cache writes, $15.00/M output"},
		{cua, "tokens: cost of the 200-step task with a prompt cache — openai", (2_000*3 + 8_000*1.5 + 100*12) / 1e3, (10_000*3 + 100*12) / 1e3,
			"$3.00/M input, $1.50/M cached input, $12.00/M output"},
	} {
		cost := c.rows[2]
		if cost.Name != c.name || math.Abs(ms(cost.P50)-c.cost) > 0.001 || math.Abs(ms(cost.Baseline)-c.baseline) > 0.001 || cost.BaselineName != "no prompt cache" {
			t.Errorf("%s: $%.6f against $%.6f (%s); want %s at $%.6f against $%.6f", cost.Name, ms(cost.P50), ms(cost.Baseline), cost.BaselineName, c.name, c.cost, c.baseline)
		}
		if !strings.Contains(cost.Note, c.prices) {
			t.Errorf("%s: note %q lacks the prices %q", cost.Name, cost.Note, c.prices)
		}
	}
	if math.Abs(ms(chat[2].Target)-0.6*ms(chat[2].Baseline)) > 0.001 || !chat[2].Pass() {
		t.Errorf("the chat cost's target is %v of %v", chat[2].Target, chat[2].Baseline)
	}
	if !strings.Contains(claude[0].Note, "10000000 in all over 1000 agent requests") || !strings.Contains(claude[0].Note, "the history condensed 2 times; the task took 1m0s") || ms(claude[0].P50) != 10_000 || ms(claude[1].P50) != 100 {
		t.Errorf("claude's per-step rows: %+v %+v", claude[0], claude[1])
	}
	var names []string
	for _, m := range sideBySide(chat, claude, cua) {
		names = append(names, m.Name)
	}
	want := []string{
		"tokens: prompt tokens per step (200-step task)", "tokens: prompt tokens per step (200-step task) — anthropic", "tokens: prompt tokens per step (200-step task) — openai",
		"tokens: completion tokens per step (200-step task)", "tokens: completion tokens per step (200-step task) — anthropic", "tokens: completion tokens per step (200-step task) — openai",
		"tokens: cost of the 200-step task with a prompt cache", "tokens: cost of the 200-step task with a prompt cache — anthropic", "tokens: cost of the 200-step task with a prompt cache — openai",
	}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows in the order\n%s", strings.Join(names, "\n"))
	}
}

// TestTokenRowsCarryTheViolation: a run the strict server refused a
// request of fails each of its rows with the server's message, in the
// table; a run with no agent request fails without figures.
func TestTokenRowsCarryTheViolation(t *testing.T) {
	msg := violationOf([]string{"claudetest refused a request (400 invalid_request_error): prompt is too long: 40000 tokens > 32768 maximum"})
	rows := backendRows(backendRun{label: " — anthropic", typ: llm.TypeAnthropic, model: "claude-sonnet-4-5", usage: []llm.Usage{{Prompt: 100, Completion: 10}}, violation: msg}, "", 0)
	for _, m := range rows {
		if m.Pass() || m.Violation != msg {
			t.Errorf("%s passes (violation %q)", m.Name, m.Violation)
		}
	}
	var b strings.Builder
	writeTable(&b, rows[:1])
	if !strings.Contains(b.String(), "**1 problem(s): claudetest refused a request (400 invalid_request_error): prompt is too long") {
		t.Errorf("table:\n%s", b.String())
	}
	for _, m := range backendRows(backendRun{label: " — openai", typ: llm.TypeOpenAI, model: "computer-use-preview"}, "", 0) {
		if m.Pass() || !strings.Contains(m.Violation, "no agent requests") {
			t.Errorf("%s of an empty run: %+v", m.Name, m)
		}
	}
}
