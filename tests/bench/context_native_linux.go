package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
	"github.com/hivecrew/hivecrew/tests/llmtest/responsestest"
)

// The long task on Claude's and OpenAI's own protocols: the same agent in
// the same real sandbox types the same lines into xterm, saying the same
// few sentences a step, through each model's native computer tool, against
// the strict scripted server of the protocol (claudetest, responsestest)
// with the same 32k-token window (computer-use-preview's own, 8,192
// tokens, for it). Each server counts the tokens of the
// requests actually sent, images by its vendor's rule, and reads and
// writes its simulated prompt cache by its vendor's documented semantics;
// the rows are its usage, request by request.

// Script names of the requests that are not the agent's steps.
const (
	summaryScript = "(summary)"
	checkScript   = "(check)"
)

// longTaskScript names the script that answers a request of the long
// task: the condensing of the history, the completion check, or the
// agent's next step.
func longTaskScript(marker string) func(body string) string {
	return func(body string) string {
		switch {
		case strings.Contains(body, summaryQuestion):
			return summaryScript
		case strings.Contains(body, checkQuestion):
			return checkScript
		case strings.Contains(body, marker):
			return marker
		}
		return ""
	}
}

// scriptErrors keeps what a scripted server reports of turns its script
// could not play.
type scriptErrors struct {
	// mu guards msgs.
	mu   sync.Mutex
	msgs []string
}

func (e *scriptErrors) errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.msgs = append(e.msgs, fmt.Sprintf(format, args...))
}

func (e *scriptErrors) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.msgs...)
}

// nativeBackend is a protocol's strict server scripted with the long task.
type nativeBackend struct {
	label, typ, model, url string
	// counted says how the server counts tokens, for the notes.
	counted string
	// target, when set, is the cost's target as a share of the uncached
	// cost.
	target float64
	// results reads, after the task, each agent request's usage, how many
	// requests condensed the history, a note on the run, and what the
	// server refused or could not play.
	results func() (run nativeResults)
	stop    func()
}

// nativeResults are what a scripted server counted of the long task.
type nativeResults struct {
	// usage and parts are each agent request's; others the usage of the
	// task's other requests (condensing, the completion check).
	usage, others []llm.Usage
	parts         []promptParts
	// summaries is how many requests condensed the history; note says
	// more of the run, problems what the server refused or could not play.
	summaries int
	note      string
	problems  []string
}

// claudeUsage is claudetest's usage in the helper's terms.
func claudeUsage(u claudetest.Usage) llm.Usage {
	prompt := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	return llm.Usage{Prompt: prompt, Completion: u.OutputTokens, Total: prompt + u.OutputTokens,
		CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}

// claudeLongTask is claudetest scripted with the long task's requests
// agent requests, for claude-sonnet-4-5: xterm opened with the open_app
// function tool, then a line typed a step with the computer tool's type.
func claudeLongTask(marker string, requests int) *nativeBackend {
	errs := &scriptErrors{}
	s, stop := claudetest.Start(errs.errorf)
	s.ContextTokens = longWindow
	s.Match = longTaskScript(marker)
	turns := []claudetest.Turn{claudetest.Reply(claudetest.Text(stepText(1)), claudetest.ToolUse("open_app", map[string]any{"name": "xterm"}))}
	for n := 2; n < requests; n++ {
		turns = append(turns, claudetest.Reply(claudetest.Text(stepText(n)), claudetest.Computer("type", map[string]any{"text": typedLine(n)})))
	}
	s.Script(marker, append(turns, claudetest.Text("I am done."))...)
	summary, verdict := claudetest.Text(summaryAnswer), claudetest.Verdict(true, "Typed the lines.")
	summary.Repeat, verdict.Repeat = true, true
	s.Script(summaryScript, summary)
	s.Script(checkScript, verdict)
	// Cache reads cost a tenth of input, as the chat rows' cached input
	// does: the same target.
	return &nativeBackend{label: " — anthropic", typ: llm.TypeAnthropic, model: "claude-sonnet-4-5", url: s.URL, stop: stop, target: 0.6,
		counted: "claudetest's usage of the requests sent (text and tool JSON at 4 bytes a token, an image at width×height/750): input_tokens + cache_creation_input_tokens + cache_read_input_tokens",
		results: func() (run nativeResults) {
			for _, r := range s.Received(marker) {
				run.usage = append(run.usage, claudeUsage(r.Usage))
				run.parts = append(run.parts, claudeParts(r.Body))
			}
			for _, r := range append(s.Received(summaryScript), s.Received(checkScript)...) {
				run.others = append(run.others, claudeUsage(r.Usage))
			}
			run.problems = errs.list()
			for _, r := range s.Refusals() {
				run.problems = append(run.problems, fmt.Sprintf("claudetest refused a request (%d %s): %s", r.Status, r.Type, r.Message))
			}
			run.summaries = len(s.Received(summaryScript))
			return run
		}}
}

// cuaLongTask is responsestest scripted with the long task's requests
// agent requests, for computer-use-preview: xterm opened with the
// open_app function, then a line typed a step with a computer_call's
// type action.
func cuaLongTask(marker string, requests int) *nativeBackend {
	errs := &scriptErrors{}
	s, stop := responsestest.Start(errs.errorf)
	// computer-use-preview's own window (8,192 tokens), not the others'
	// 32k: the agent knows it and condenses to fit.
	s.ContextTokens = llm.ContextWindow("computer-use-preview", 0)
	match := longTaskScript(marker)
	s.Match = match
	turns := []responsestest.Turn{responsestest.Items(responsestest.Text(stepText(1)), responsestest.Call("open_app", map[string]any{"name": "xterm"}))}
	for n := 2; n < requests; n++ {
		turns = append(turns, responsestest.Items(responsestest.Text(stepText(n)), responsestest.Computer(map[string]any{"type": "type", "text": typedLine(n)})))
	}
	s.Script(marker, append(turns, responsestest.Text("I am done."))...)
	summary, verdict := responsestest.Text(summaryAnswer), responsestest.Verdict(true, "Typed the lines.")
	summary.Repeat, verdict.Repeat = true, true
	s.Script(summaryScript, summary)
	s.Script(checkScript, verdict)
	return &nativeBackend{label: " — openai", typ: llm.TypeOpenAI, model: "computer-use-preview", url: s.URL, stop: stop,
		counted: "responsestest's usage of the requests sent (text at 4 bytes a token, a screenshot by OpenAI's tile rule for computer-use-preview): input_tokens",
		results: func() (run nativeResults) {
			truncated := 0
			run.problems = errs.list()
			for _, r := range s.Received() {
				if r.Status != http.StatusOK {
					run.problems = append(run.problems, fmt.Sprintf("responsestest refused a request (%d %s): %s", r.Status, r.Code, r.Error))
					continue
				}
				u := r.Usage
				usage := llm.Usage{Prompt: u.InputTokens, Completion: u.OutputTokens, Total: u.TotalTokens, CacheRead: u.CachedTokens}
				switch match(r.Body) {
				case summaryScript:
					run.summaries++
					run.others = append(run.others, usage)
				case checkScript:
					run.others = append(run.others, usage)
				case marker:
					run.usage = append(run.usage, usage)
					run.parts = append(run.parts, responsesParts(r.Body))
					if r.Truncated > 0 {
						truncated++
					}
				}
			}
			if truncated > 0 {
				// The agent's window is larger than the server's: OpenAI
				// truncates what passes the real one.
				run.note = fmt.Sprintf("; the agent assumes a %dk window for computer-use-preview: the server's truncation \"auto\" dropped items from %d requests past its %dk window, which breaks their cached prefix",
					llm.ContextWindow("computer-use-preview", 0)/1000, truncated, s.ContextTokens/1024)
			}
			return run
		}}
}

// nativeTokenRows runs the long task, requests agent requests long, on
// each native protocol in turn and returns each one's token rows.
func nativeTokenRows(ctx context.Context, h *helperProc, requests int) ([][3]Metric, error) {
	var out [][3]Metric
	for _, start := range []func(string, int) *nativeBackend{claudeLongTask, cuaLongTask} {
		marker := fmt.Sprintf("[[long%d]]", len(out)+1)
		b := start(marker, requests)
		run, err := runLongTask(ctx, h, b, marker)
		b.stop()
		if err != nil {
			return nil, err
		}
		read, write := cacheShares(run)
		var cache string
		switch b.typ {
		case llm.TypeAnthropic:
			cache = fmt.Sprintf("%.0f%% of the prompt tokens read from Claude's prompt cache and %.0f%% written to it (the agent's cache breakpoints; cache_read_input_tokens, cache_creation_input_tokens)", read, write)
		default:
			cache = fmt.Sprintf("%.0f%% of the prompt tokens cached (OpenAI's automatic prefix cache; input_tokens_details.cached_tokens); no target: cached input costs half, so even a whole prompt cached saves at most half its cost", read)
		}
		out = append(out, backendRows(run, cache, b.target))
	}
	return out, nil
}

// runLongTask adds the backend as a provider, runs the long task on it and
// reads what its server counted.
func runLongTask(ctx context.Context, h *helperProc, b *nativeBackend, marker string) (backendRun, error) {
	name := "Scripted " + strings.TrimPrefix(b.label, " — ")
	if err := h.addProvider(ctx, name, b.typ, b.url, b.model); err != nil {
		return backendRun{}, err
	}
	t0 := time.Now()
	task, err := h.createOn(ctx, name, b.model, "Type numbered lines into a terminal for a long while "+marker)
	if err != nil {
		return backendRun{}, err
	}
	done, err := h.waitTask(ctx, task.ID, "the end of the 200-step task on "+b.typ, 15*time.Minute, terminal)
	if err != nil {
		return backendRun{}, err
	}
	run := backendRun{label: b.label, typ: b.typ, model: b.model, took: time.Since(t0)}
	res := b.results()
	run.usage, run.parts, run.others, run.summaries = res.usage, res.parts, res.others, res.summaries
	run.counted = b.counted + res.note
	if done.Status != "completed" {
		res.problems = append(res.problems, fmt.Sprintf("the task ended %s (%s)", done.Status, done.StatusReason))
	}
	run.violation = violationOf(res.problems)
	return run, nil
}
