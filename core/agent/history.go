package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/llm"
)

// Long tasks: the conversation is append-only text (screenshots become
// notes in chunks, llm.Window), so it grows by a step's words each step.
// Before a request would pass ContextShare of the model's window (by the
// client's token estimate), and when the provider refuses a prompt as too
// long (once per step), the history between the task and the latest
// recentObservations screens is condensed by the same model into one
// message, as the Swift app does at about 85% of the window.
//
// Condensing is also done earlier, for cost: every step reads the whole
// history again (from a prompt cache, at a tenth of the input price at
// best), so a history left to grow to 85% of the window is most of a long
// task's cost. Once a request passes costShare of the window, the history
// is condensed if the part a summary replaces is at least condensableShare
// of the window: enough to be worth a summary request (a small window whose
// prompt is mostly tools and screens, computer-use-preview's, is not
// condensed over and over for a few steps of text). A model on a provider
// that caches by breakpoints (Anthropic) is asked for the summary in the
// conversation itself, read from its cache, and so condenses sooner, at
// condenseTokens of history whatever its window.

// DefaultContextShare is the share of the window a request may fill.
const DefaultContextShare = 0.85

// costShare and condensableShare: when the history is condensed early.
const costShare, condensableShare = 0.5, 0.25

// condenseTokens is the history, older than the screens kept, at which a
// model that summarises in place (condensesInPlace) condenses it, whatever
// its window. Every step reads that history again from the prompt cache,
// at a tenth of the input price; a summary costs one request read mostly
// from the cache, its answer, and the kept steps' words written again.
// With a history growing by g tokens a step, reading plus summarising
// costs least when the history is condensed at sqrt(2·C·g/r) tokens (C a
// summary's cost, r the read price, in input tokens): about 2,200 tokens
// for a summary of a sentence and 3,600 for one of 400 words, at g = 130
// (a step's words and call). The 200-step benchmark task costs $1.48 at
// 3,072, $1.50 at 4,096 and $1.54 at 6,144 (docs/benchmark.md).
const condenseTokens = 4096

// condenseSteps is the fewest steps between two summaries made for cost
// by a model that summarises in place: a history that grows faster than
// about 400 tokens a step (long tool results) costs least condensed later
// than condenseTokens, and the model is not summarised step after step.
const condenseSteps = 10

// recentObservations are the latest screens (and what followed each)
// kept word for word when the history is condensed.
const recentObservations = 3

// summaryPrompt asks for the condensed history.
const summaryPrompt = `You condense the history of an AI agent that operates a computer to do a task, so that it can go on with a shorter conversation. Write what the agent has done so far, what it found (names of files, windows, values, URLs, errors), what did not work, and what is left to do, in at most 400 words of plain text. Do not invent anything that is not in the history.`

// summaryLead starts the message that replaces the condensed history.
const summaryLead = "Summary of the earlier steps (the conversation before this point was condensed to fit the model's context window):\n"

// tooLong says why the history should be condensed before the next
// request: it would pass the task's share of the window; or, where the
// model summarises in place (condensesInPlace), condenseTokens of earlier
// steps would be read again at the start of an image chunk, condenseSteps
// or more after the last summary; or it passes
// costShare of the window with enough to condense. "" when it need not be.
func (r *Runner) tooLong() string {
	sent := llm.Window(r.msgs, r.task.KeepImages)
	est := r.cfg.LLM.EstimateTokens(sent) + r.toolTokens
	window := float64(r.task.ContextTokens)
	if float64(est) > r.task.ContextShare*window {
		return fmt.Sprintf("the next request, about %d tokens, would pass %.0f%% of the model's %d-token window", est, r.task.ContextShare*100, r.task.ContextTokens)
	}
	cut := r.condenseCut()
	if cut <= 1 {
		return ""
	}
	// Window keeps the messages where they were: sent[1:cut] is what a
	// summary replaces, as it is sent.
	old := r.cfg.LLM.EstimateTokens(sent[1:cut])
	if r.condensesInPlace() && old >= condenseTokens && r.Steps()-r.condensedAt >= condenseSteps && llm.WindowStartsChunk(r.msgs, r.task.KeepImages) {
		return fmt.Sprintf("%d tokens of earlier steps, which every step reads again from the prompt cache", old)
	}
	if float64(est) > costShare*window && float64(old) >= condensableShare*window {
		return fmt.Sprintf("the next request, about %d tokens, passes %.0f%% of the model's %d-token window, %d of them earlier steps every step reads again", est, costShare*100, r.task.ContextTokens, old)
	}
	return ""
}

// condensesInPlace says the history is summarised in the conversation
// itself (inPlaceSummary): by the task's own model, on a provider that
// caches by breakpoints.
func (r *Runner) condensesInPlace() bool {
	return r.cfg.Condenser == nil && r.cfg.LLM.CachesByBreakpoints()
}

// condenseCut is the index of the first message condensing keeps: the
// oldest of the latest recentObservations screens; -1 when there are not
// that many.
func (r *Runner) condenseCut() int {
	seen := 0
	for i := len(r.msgs) - 1; i >= 1; i-- {
		// A step's observation: its screen, or for an agent without a VM
		// the step's user message.
		if m := r.msgs[i]; m.Role == llm.RoleUser && (m.HasImage() || r.task.Host) {
			if seen++; seen == recentObservations {
				return i
			}
		}
	}
	return -1
}

// condense replaces the history between the task (the first message) and
// the latest recentObservations screens with a summary written by the
// model. inPlace lets it ask in the conversation itself (inPlaceSummary)
// where that is cheaper; a prompt the provider refused as too long is
// never sent again with a question added.
func (r *Runner) condense(ctx context.Context, step int, why string, inPlace bool) error {
	cut := r.condenseCut()
	if cut <= 1 {
		return errNothingToCondense
	}
	model := r.cfg.LLM
	if r.cfg.Condenser != nil {
		model = r.cfg.Condenser
	}
	text, used := "", llm.Usage{}
	if inPlace && r.condensesInPlace() {
		var err error
		if text, used, err = r.inPlaceSummary(ctx); err != nil {
			if ctx.Err() != nil {
				return err
			}
			r.cfg.Log.Warn("history not summarised in the conversation; summarising its transcript", "err", err)
		}
	}
	if text == "" {
		reply, err := model.Complete(ctx, llm.Request{System: summaryPrompt, NoReasoning: true, OneShot: true, Messages: []llm.Message{
			llm.UserText("The task: " + r.task.Description + "\n\nThe history to condense:\n" + transcript(r.msgs[1:cut])),
		}})
		if err != nil {
			return fmt.Errorf("condense the history: %w", err)
		}
		r.addUsage(reply.Usage)
		used = used.Add(reply.Usage)
		if text = strings.TrimSpace(reply.Text); text == "" {
			return errors.New("condense the history: the model wrote no summary")
		}
	}
	summary := llm.UserText(summaryLead + text)
	r.filterMessage(&summary)
	// The steps kept go on as they were last sent: a screenshot already a
	// note stays one, so the next request shows the same screens and
	// writes no older one to the cache again.
	out := make([]llm.Message, 0, 2+len(r.msgs)-cut)
	out = append(out, r.msgs[0], summary)
	r.msgs = append(out, llm.Window(r.msgs, r.task.KeepImages)[cut:]...)
	r.saveCondensed(cut, summary)
	r.condensedAt = step
	r.mu.Lock()
	r.summaries++
	r.mu.Unlock()
	what := "screens"
	if r.task.Host {
		what = "steps"
	}
	by := ""
	if model != r.cfg.LLM {
		by = " (by the worker model, " + model.Model() + ")"
	}
	r.emit(step, Event{Type: "status_change", ActivityType: "info", Summary: fmt.Sprintf("Condensed the history before the last %d %s into a summary%s: %s", recentObservations, what, by, why), Usage: used})
	return nil
}

// inPlaceQuestion ends the conversation of an in-place summary.
const inPlaceQuestion = summaryPrompt + " The agent is you, and the history is this conversation. Answer with the summary alone, without a tool call."

// inPlaceSummary asks the model for the summary in the conversation
// itself: the request the next step would send (its tools, system prompt,
// reasoning and screens), with the question added and marked one-shot. A
// provider that caches by breakpoints reads all of it but the newest turn
// from its cache (what the last step wrote) at a tenth of the input price,
// where a transcript of the history is a new prompt, input at full price
// (or written to the cache at 1.25 times). Its answer, without a tool
// call, is the summary.
func (r *Runner) inPlaceSummary(ctx context.Context) (string, llm.Usage, error) {
	req := r.request(append(llm.Window(r.msgs, r.task.KeepImages), llm.UserText(inPlaceQuestion)))
	req.OneShot = true
	reply, err := r.cfg.LLM.Complete(ctx, req)
	if err != nil {
		return "", llm.Usage{}, fmt.Errorf("condense the history: %w", err)
	}
	r.addUsage(reply.Usage)
	text := strings.TrimSpace(reply.Text)
	if text == "" || len(reply.ToolCalls) > 0 {
		return "", reply.Usage, fmt.Errorf("condense the history: the model answered with %d tool calls and %d bytes of text", len(reply.ToolCalls), len(text))
	}
	return text, reply.Usage, nil
}

// transcript renders messages as text for the summary request: the
// screenshots left out, long results cut.
func transcript(messages []llm.Message) string {
	var b strings.Builder
	for _, m := range messages {
		for _, bl := range m.Content {
			switch bl.Type {
			case llm.BlockText:
				fmt.Fprintf(&b, "[%s] %s\n", m.Role, truncate(bl.Text, 2000))
			case llm.BlockToolCall:
				fmt.Fprintf(&b, "[%s calls] %s %s\n", m.Role, bl.Call.Name, truncate(string(bl.Call.Args), 500))
			case llm.BlockToolResult:
				fmt.Fprintf(&b, "[result] %s\n", truncate(bl.Result.Text(), 2000))
			}
		}
	}
	return b.String()
}

// toolsTokens estimates what the tool definitions add to every request.
func toolsTokens(defs []llm.Tool) int {
	b, _ := json.Marshal(defs)
	return len(b) / 4
}
