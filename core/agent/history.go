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
// condensed over and over for a few steps of text).

// DefaultContextShare is the share of the window a request may fill.
const DefaultContextShare = 0.85

// costShare and condensableShare: when the history is condensed early.
const costShare, condensableShare = 0.5, 0.25

// recentObservations are the latest screens (and what followed each)
// kept word for word when the history is condensed.
const recentObservations = 3

// summaryPrompt asks for the condensed history.
const summaryPrompt = `You condense the history of an AI agent that operates a computer to do a task, so that it can go on with a shorter conversation. Write what the agent has done so far, what it found (names of files, windows, values, URLs, errors), what did not work, and what is left to do, in at most 400 words of plain text. Do not invent anything that is not in the history.`

// summaryLead starts the message that replaces the condensed history.
const summaryLead = "Summary of the earlier steps (the conversation before this point was condensed to fit the model's context window):\n"

// tooLong says why the history should be condensed before the next
// request: it would pass the task's share of the window, or costShare of
// it with enough to condense; "" when it need not be.
func (r *Runner) tooLong() string {
	sent := llm.Window(r.msgs, r.task.KeepImages)
	est := r.cfg.LLM.EstimateTokens(sent) + r.toolTokens
	window := float64(r.task.ContextTokens)
	if float64(est) > r.task.ContextShare*window {
		return fmt.Sprintf("the next request, about %d tokens, would pass %.0f%% of the model's %d-token window", est, r.task.ContextShare*100, r.task.ContextTokens)
	}
	if float64(est) <= costShare*window {
		return ""
	}
	// Window keeps the messages where they were: sent[1:cut] is what a
	// summary replaces, as it is sent.
	if cut := r.condenseCut(); cut > 1 {
		if old := r.cfg.LLM.EstimateTokens(sent[1:cut]); float64(old) >= condensableShare*window {
			return fmt.Sprintf("the next request, about %d tokens, passes %.0f%% of the model's %d-token window, %d of them earlier steps every step reads again", est, costShare*100, r.task.ContextTokens, old)
		}
	}
	return ""
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
// model.
func (r *Runner) condense(ctx context.Context, step int, why string) error {
	cut := r.condenseCut()
	if cut <= 1 {
		return errNothingToCondense
	}
	model := r.cfg.LLM
	if r.cfg.Condenser != nil {
		model = r.cfg.Condenser
	}
	reply, err := model.Complete(ctx, llm.Request{System: summaryPrompt, NoReasoning: true, Messages: []llm.Message{
		llm.UserText("The task: " + r.task.Description + "\n\nThe history to condense:\n" + transcript(r.msgs[1:cut])),
	}})
	if err != nil {
		return fmt.Errorf("condense the history: %w", err)
	}
	r.addUsage(reply.Usage)
	text := strings.TrimSpace(reply.Text)
	if text == "" {
		return errors.New("condense the history: the model wrote no summary")
	}
	summary := llm.UserText(summaryLead + text)
	r.filterMessage(&summary)
	out := make([]llm.Message, 0, 2+len(r.msgs)-cut)
	out = append(out, r.msgs[0], summary)
	r.msgs = append(out, r.msgs[cut:]...)
	r.saveCondensed(cut, summary)
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
	r.emit(step, Event{Type: "status_change", ActivityType: "info", Summary: fmt.Sprintf("Condensed the history before the last %d %s into a summary%s: %s", recentObservations, what, by, why), Usage: reply.Usage})
	return nil
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
