package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Tool is a function tool the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of its arguments (an object).
	Parameters json.RawMessage
}

// Request is one question to the model.
type Request struct {
	// System is the system prompt.
	System   string
	Messages []Message
	Tools    []Tool
	// Computer, when set, offers the model its provider's own computer
	// tool (Client.Native) for this display.
	Computer *Display
	// MaxTokens bounds the answer; 0 is the backend's default.
	MaxTokens int
	// NoReasoning asks without the client's reasoning effort (titles,
	// summaries, the completion check).
	NoReasoning bool
	// ImagesDropNext says the next request will send this one's images as
	// notes (WindowDropsNext): a backend that writes a prompt cache by
	// breakpoints (Anthropic) leaves out what would not be read again.
	ImagesDropNext bool
	// OneShot says nothing of this request's newest turn is sent again (a
	// summary of the history): a backend that writes a prompt cache by
	// breakpoints (Anthropic) reads what earlier requests wrote and sends
	// that turn as input, not as a cache write.
	OneShot bool

	// verdict asks for the completion check's structured answer
	// (verdictTool, or a JSON schema).
	verdict bool
}

// Stop reasons of a reply.
const (
	StopEnd     = "end"      // the model finished its turn
	StopToolUse = "tool_use" // it asked for tools
	StopLength  = "length"   // it ran out of tokens
)

// Reply is the model's answer to one turn.
type Reply struct {
	// Message is the assistant message, to append to the conversation as
	// it is: it carries what the provider needs back.
	Message Message
	// Text is what the model said; ToolCalls what it asked to do, in order.
	Text      string
	ToolCalls []ToolCall
	// Reasoning is the model's reasoning (or its summary) when the
	// provider shows it.
	Reasoning string
	Usage     Usage
	Stop      string
}

// newReply gathers a Reply from its assistant message.
func newReply(msg Message, u Usage, stop string) Reply {
	r := Reply{Message: msg, Usage: u, Stop: stop}
	var text, reasoning []string
	for _, b := range msg.Content {
		switch b.Type {
		case BlockText:
			text = append(text, b.Text)
		case BlockToolCall:
			c := *b.Call
			if len(strings.TrimSpace(string(c.Args))) == 0 {
				c.Args = json.RawMessage("{}")
			}
			r.ToolCalls = append(r.ToolCalls, c)
		case BlockReasoning:
			if b.Reasoning.Text != "" {
				reasoning = append(reasoning, b.Reasoning.Text)
			}
		}
	}
	r.Text, r.Reasoning = strings.Join(text, ""), strings.Join(reasoning, "\n\n")
	if r.Stop == "" {
		r.Stop = StopEnd
		if len(r.ToolCalls) > 0 {
			r.Stop = StopToolUse
		}
	}
	return r
}

// Complete asks the model and returns its reply.
func (c *Client) Complete(ctx context.Context, req Request) (Reply, error) {
	return c.CompleteStream(ctx, req, nil)
}

// CompleteStream is Complete with the answer streamed: onDelta, when set,
// hears the text and reasoning as they come (on the calling goroutine).
func (c *Client) CompleteStream(ctx context.Context, req Request, onDelta func(Delta)) (Reply, error) {
	limit := c.cfg.Timeout
	if onDelta != nil {
		limit *= streamSpan
	}
	var r Reply
	err := c.doFor(ctx, limit, func(actx context.Context) error {
		if onDelta != nil {
			onDelta(Delta{Restart: true})
		}
		var err error
		r, err = c.be.send(actx, &req, onDelta)
		return err
	})
	return r, err
}

// Verdict is the completion check's structured answer.
type Verdict struct {
	Success bool   `json:"success" description:"true if the task was fully accomplished"`
	Summary string `json:"summary" description:"what was done and its result, or why the task cannot be completed"`
}

// verdictTool names the completion check where it is a forced tool call
// (Anthropic).
const verdictTool = "completion_check"

// verdictSchema is Verdict's JSON schema.
const verdictSchema = `{"type":"object","properties":{"success":{"type":"boolean","description":"true if the task was fully accomplished"},"summary":{"type":"string","description":"what was done and its result, or why the task cannot be completed"}},"required":["success","summary"],"additionalProperties":false}`

// errNoChoices is an answer without choices, which providers send now and
// then under load; do retries it.
var errNoChoices = errors.New("the answer has no choices")

// verifyAttempts bounds the completion checks asked again when the model
// answers with something that is not the verdict.
const verifyAttempts = 3

// Verify asks the model whether the task is done, in the structured form
// its protocol has (a JSON schema, or a forced tool call), and returns its
// verdict. An answer that is not the verdict is asked again (with backoff)
// up to verifyAttempts times before it is an error.
func (c *Client) Verify(ctx context.Context, req Request) (Verdict, Usage, error) {
	req.verdict, req.NoReasoning = true, true
	var total Usage
	for attempt := 1; ; attempt++ {
		r, err := c.Complete(ctx, req)
		total = total.Add(r.Usage)
		var v Verdict
		if err == nil {
			v, err = readVerdict(r)
		}
		if err == nil || !errors.Is(err, errdefs.ErrInvalid) || attempt >= verifyAttempts {
			return v, total, err
		}
		t := time.NewTimer(c.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return Verdict{}, total, ctx.Err()
		case <-t.C:
		}
	}
}

// readVerdict reads the verdict from a reply: the forced tool's arguments,
// or the text (JSON, in a code fence or not).
func readVerdict(r Reply) (Verdict, error) {
	text := strings.TrimSpace(r.Text)
	for _, call := range r.ToolCalls {
		if call.Name == verdictTool {
			text = string(call.Args)
		}
	}
	// Some endpoints wrap JSON in a code fence despite the schema.
	text = strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(text, "```json"), "```"), "```")
	var v struct {
		Success *bool   `json:"success"`
		Summary *string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &v); err != nil || v.Success == nil {
		return Verdict{}, errdefs.Invalidf("the completion check did not answer with {success, summary}: %q", truncate(text, 200))
	}
	out := Verdict{Success: *v.Success}
	if v.Summary != nil {
		out.Summary = *v.Summary
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// refusal is the final error of an answer the model refused to give.
func refusal(what string) error {
	return &Error{Message: fmt.Sprintf("the model refused to go on (%s); the step ended without an answer", what)}
}
