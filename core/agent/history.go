package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/llm"
)

// Long tasks: the conversation is append-only text (screenshots become
// notes in chunks, llm.Window), so it grows by a step's words each step.
// Before a request would pass ContextShare of the model's window (by
// llm.EstimateTokens), and when the provider refuses a prompt as too long
// (once per step), the history before the latest recentObservations
// screens is condensed by the same model into one message, as the Swift
// app does at about 85% of the window.

// DefaultContextShare is the share of the window a request may fill.
const DefaultContextShare = 0.85

// recentObservations are the latest screens (and what followed each)
// kept word for word when the history is condensed.
const recentObservations = 3

// summaryPrompt asks for the condensed history.
const summaryPrompt = `You condense the history of an AI agent that operates a computer to do a task, so that it can go on with a shorter conversation. Write what the agent has done so far, what it found (names of files, windows, values, URLs, errors), what did not work, and what is left to do, in at most 400 words of plain text. Do not invent anything that is not in the history.`

// summaryLead starts the message that replaces the condensed history.
const summaryLead = "Summary of the earlier steps (the conversation before this point was condensed to fit the model's context window):\n"

var errNothingToCondense = errors.New("the history is too short to condense")

// isObservation says m is a step's screen (a user message with an image).
func isObservation(m openai.ChatCompletionMessage) bool {
	if m.Role != openai.ChatMessageRoleUser {
		return false
	}
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeImageURL {
			return true
		}
	}
	return false
}

// tooLong says the next request would pass the task's share of the window.
func (r *Runner) tooLong(messages []openai.ChatCompletionMessage) (bool, int) {
	est := llm.EstimateTokens(llm.Window(messages, r.task.KeepImages)) + r.toolTokens
	return float64(est) > r.task.ContextShare*float64(r.task.ContextTokens), est
}

// condense replaces the history between the task and the latest
// recentObservations screens with a summary written by the model. It
// keeps the system prompt and the task (messages[0:2]).
func (r *Runner) condense(ctx context.Context, step int, messages []openai.ChatCompletionMessage, why string) ([]openai.ChatCompletionMessage, error) {
	cut, seen := -1, 0
	for i := len(messages) - 1; i >= 2; i-- {
		if isObservation(messages[i]) {
			if seen++; seen == recentObservations {
				cut = i
				break
			}
		}
	}
	if cut <= 2 {
		return messages, errNothingToCondense
	}
	ask := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: summaryPrompt},
		{Role: openai.ChatMessageRoleUser, Content: "The task: " + r.task.Description + "\n\nThe history to condense:\n" + transcript(messages[2:cut])},
	}
	reply, err := r.cfg.LLM.Complete(ctx, ask, nil)
	if err != nil {
		return messages, fmt.Errorf("condense the history: %w", err)
	}
	r.addUsage(reply.Usage)
	text := strings.TrimSpace(reply.Text)
	if text == "" {
		return messages, errors.New("condense the history: the model wrote no summary")
	}
	summary := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: summaryLead + text}
	out := make([]openai.ChatCompletionMessage, 0, 3+len(messages)-cut)
	out = append(out, messages[0], messages[1], summary)
	out = append(out, messages[cut:]...)
	r.mu.Lock()
	r.summaries++
	r.mu.Unlock()
	r.emit(step, Event{Type: "status_change", ActivityType: "info", Summary: fmt.Sprintf("Condensed the history before the last %d screens into a summary: %s", recentObservations, why), Usage: reply.Usage})
	if err := r.cfg.Trace.AppendConversation(summary); err != nil {
		r.traceFailed(err)
	}
	return out, nil
}

// transcript renders messages as text for the summary request: the
// screenshots as notes, long results cut.
func transcript(messages []openai.ChatCompletionMessage) string {
	var b strings.Builder
	for _, m := range llm.Compact(messages, 0) {
		text := m.Content
		for _, p := range m.MultiContent {
			if p.Type == openai.ChatMessagePartTypeText {
				text += p.Text
			}
		}
		fmt.Fprintf(&b, "[%s] %s\n", m.Role, truncate(text, 2000))
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "[%s calls] %s %s\n", m.Role, c.Function.Name, truncate(c.Function.Arguments, 500))
		}
	}
	return b.String()
}

// toolsTokens estimates what the tool definitions add to every request.
func toolsTokens(defs []openai.Tool) int {
	b, _ := json.Marshal(defs)
	return len(b) / 4
}
