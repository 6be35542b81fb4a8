package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/llm"
)

// benchContext measures a long task's prompts (issue 17.2, 17.3): one
// agent in a real sandbox types into xterm for 200 steps against a
// provider whose model has a 32k-token window and that refuses longer
// prompts as real ones do (its tokenizer counts 8/7 of the agent's
// estimate). The provider records every request: how much of the previous
// request it repeats byte for byte at its start (what a prompt cache can
// reuse), its images and size, and the requests that condensed the
// history.
func benchContext(ctx context.Context, _ *slog.Logger) (_ []Metric, err error) {
	const steps = longSteps
	p := newProvider()
	p.window = longWindow
	defer p.close()
	h, err := startHelper()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.close()) }()
	if err := h.configure(ctx, p, map[string]any{"warmPoolSize": 0}); err != nil {
		return nil, err
	}
	const marker = "[[long]]"
	p.set(marker, func(n int, check bool) (openai.ChatCompletionMessage, <-chan struct{}) {
		if n > steps+5 { // past the work (and its summaries): finish
			return finish(n, check)
		}
		msg, hold := writing(n, check)
		msg.Content = stepText(n)
		return msg, hold
	})
	t0 := time.Now()
	task, err := h.create(ctx, "Type numbered lines into a terminal for a long while "+marker)
	if err != nil {
		return nil, err
	}
	done, err := h.waitTask(ctx, task.ID, "the end of the 200-step task", 15*time.Minute, terminal)
	if err != nil {
		return nil, err
	}
	took := time.Since(t0)
	var agentReqs, others []exchange
	summaries, overflows := 0, 0
	for _, e := range p.exchanges(marker) {
		switch {
		case e.overflow:
			overflows++
		case e.summary:
			summaries++
			others = append(others, e)
		case e.check:
			others = append(others, e)
		default:
			agentReqs = append(agentReqs, e)
		}
	}
	if len(agentReqs) < 41 {
		return nil, fmt.Errorf("the long task sent %d requests (status %s: %s)", len(agentReqs), done.Status, done.StatusReason)
	}
	var prefix, images []time.Duration
	var mean float64
	for i, e := range agentReqs {
		images = append(images, Quantity(float64(e.images)))
		if step := i + 1; step >= 10 && step <= 40 && e.prevBytes > 0 {
			share := 100 * float64(e.prefix) / float64(e.prevBytes)
			prefix = append(prefix, Quantity(share))
			mean += share / 31
		}
	}
	pp50, pp95 := percentiles(prefix)
	ip50, ip95 := percentiles(images)
	maxImages := 0
	for _, e := range agentReqs {
		maxImages = max(maxImages, e.images)
	}
	kb := Quantity(float64(agentReqs[39].bytes) / 1024)
	chat := chatTokenRows(chatRun(agentReqs, others, summaries, took), mean)
	// The same workload on Claude's and OpenAI's own protocols, as many
	// agent requests as the chat run made.
	native, err := nativeTokenRows(ctx, h, len(agentReqs))
	if err != nil {
		return nil, err
	}
	sums := Metric{Name: "context: condensed histories in a 200-step task (32k-token window)", P50: Quantity(float64(summaries)), P95: Quantity(float64(summaries)),
		Target: Quantity(2), Unit: "count", Samples: 1,
		Note: fmt.Sprintf("%d provider refusals as too long (each condensed and asked again); the task ended %s after %d agent requests", overflows, done.Status, len(agentReqs))}
	if done.Status != "completed" {
		sums.Violation = fmt.Sprintf("the task ended %s (%s)", done.Status, done.StatusReason)
	}
	return append([]Metric{
		{Name: "context: median share of the previous prompt repeated at the start of the next (steps 10-40)", P50: pp50, P95: pp95, Target: Quantity(90), AtLeast: true, Unit: "%", Samples: len(prefix),
			Note: fmt.Sprintf("the prompt as the model reads it (tools, then messages); mean %.1f%%: screenshots become notes 3 at a time, so 1 step in 3 repeats only the text before the oldest image", mean)},
		{Name: "context: images per request", P50: ip50, P95: ip95, Target: Quantity(3), TargetOnP95: true, Unit: "count", Samples: len(images),
			Note: fmt.Sprintf("at most %d", maxImages)},
		{Name: "context: prompt bytes at step 40", P50: kb, P95: kb, Target: Quantity(100), Unit: "KB", Samples: 1,
			Note: "the 1280x800 xterm screen as 1024x640 screenshots (the default cap) in data URLs, the text history and the tools"},
		sums,
	}, sideBySide(append([][3]Metric{chat}, native...)...)...), nil
}

// The long task: 200 steps against a model with a 32k-token window.
const longSteps, longWindow = 200, 32_768

// stepText is what the model says at step n of the long task: a real
// model says what it sees and plans, a few sentences a step.
func stepText(n int) string {
	return fmt.Sprintf("Step %d. The terminal shows the numbered lines typed so far, the latest at the bottom and the prompt after it. "+
		"Nothing else on the screen has changed since the last step, and no dialog is open. I type the next line now, with its number, "+
		"and then look at the screen again to check that it arrived whole before going on with the one after it.", n)
}

// chatRun is the chat provider's run of the long task as a backend: its
// tokenizer's counts (8/7 of the agent's estimate), with the tokens of
// each prompt's start that repeat the previous one's (the tools, whole
// messages and blocks) as what a prompt cache reads. others are the task's other requests (condensing, the
// completion check), billed uncached.
func chatRun(reqs, others []exchange, summaries int, took time.Duration) backendRun {
	b := backendRun{typ: llm.TypeOpenAICompatible, model: "scripted", summaries: summaries, took: took,
		counted: "images counted as the agent estimates them, 8/7 of its estimate as a stricter tokenizer would"}
	for i, e := range reqs {
		u := llm.Usage{Prompt: e.promptTokens, Completion: e.answerTokens, Total: e.promptTokens + e.answerTokens}
		if i > 0 {
			u.CacheRead = e.cached
		}
		b.usage = append(b.usage, u)
		b.parts = append(b.parts, e.parts)
	}
	for _, e := range others {
		b.others = append(b.others, llm.Usage{Prompt: e.promptTokens, Completion: e.answerTokens, Total: e.promptTokens + e.answerTokens})
	}
	return b
}

// chatTokenRows are the chat provider's token rows: the workload's
// tokens and cost at the reference prices, with the share of each prompt
// that repeats the previous one's start billed as cached input, against
// the same without a prompt cache.
func chatTokenRows(b backendRun, cachedShare float64) [3]Metric {
	read, _ := cacheShares(b)
	note := fmt.Sprintf("%.0f%% of the prompt tokens repeat the previous prompt's start (cache-eligible; mean share per step %.1f%%)", read, cachedShare)
	return backendRows(b, note, 0.6)
}
