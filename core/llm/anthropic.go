package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// The Anthropic backend: Claude through the Messages API, on the official
// github.com/anthropics/anthropic-sdk-go (v2). What it takes of the SDK:
// the request and content-block types of the beta Messages API (the
// computer tool is a beta), its streaming (server-sent events decoded into
// typed events, accumulated into the message with BetaMessage.Accumulate),
// its error type, and its model list. What it leaves: retries (the
// client's own, which honour Retry-After and tell the user what they wait
// for: the SDK's are off), and credentials from the environment (off: the
// provider's key is the only key, and its base URL the only address).
// Requests go through the client's HTTP client, which records each
// answer's status and Retry-After; a middleware bounds the answer's size
// and feeds the stall watchdog.
//
//   - Claude's `computer` tool (computer_20250124; computer_20251124, with
//     zoom, for the models that take it) with its beta header, beside the
//     agent's function tools.
//   - Extended thinking from the reasoning effort (thinkingBudget), with
//     interleaved thinking (its beta) on Claude 4 and later, so that the
//     model thinks at every step of a tool loop, not only its first:
//     thinking blocks and their signatures, and redacted thinking, go back
//     unchanged, as the API requires with tool use.
//   - Prompt caching: breakpoints on the system prompt (which caches the
//     tools before it), the last two user turns and the turn before the
//     oldest image, the four the API allows (claudeMarks), so each request
//     reads the previous one's prefix, and the one after Window drops its
//     images reads all before them; none on what is not read again (the
//     newest turn of a request whose images the next one drops, or of a
//     one-shot request; the completion check's messages).
//   - 529 overloaded and 429 are retried (after Retry-After); "prompt is too
//     long" is a context overflow (IsContextOverflow); stop_reason
//     "refusal" ends the step with an error, never as an answer.

type anthropicBackend struct {
	c   *Client
	api anthropic.Client

	// mu guards zoom.
	mu sync.Mutex
	// zoom: the computer tool offered is computer_20251124; flipped once
	// when the API refuses the version offered.
	zoom    bool
	flipped bool
}

// zoomModels take computer_20251124 (its zoom action): Anthropic's docs
// name it for Claude Opus 4.5; others get computer_20250124, and a model
// that refuses the version it is offered gets the other one.
var zoomModels = []string{"claude-opus-4-5", "claude-opus-4-6"}

func newAnthropic(c *Client) (*anthropicBackend, error) {
	// Anthropic's paths start with /v1: a base URL that already ends in
	// it (as an OpenAI one would) is taken without.
	base := strings.TrimSuffix(c.cfg.BaseURL, "/v1")
	api := anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base+"/"),
		option.WithAPIKey(c.cfg.APIKey),
		option.WithHTTPClient(c.doer),
		option.WithMaxRetries(0),
	)
	b := &anthropicBackend{c: c, api: api}
	id := strings.ToLower(c.cfg.Model[strings.LastIndex(c.cfg.Model, "/")+1:])
	for _, m := range zoomModels {
		b.zoom = b.zoom || strings.HasPrefix(id, m)
	}
	return b, nil
}

func (b *anthropicBackend) native() string { return NativeAnthropic }

// Thinking budgets by reasoning effort, and the room an answer has beside
// its thinking.
var thinkingBudget = map[string]int64{"minimal": 1024, "low": 2048, "medium": 6144, "high": 16384, "xhigh": 24576}

const answerTokens = 8192

// adaptiveModels take adaptive thinking rather than a budget (the SDK
// warns that budgets are deprecated for them): the effort goes in
// output_config.
var adaptiveModels = []string{"claude-opus-4-6"}

func (b *anthropicBackend) params(req *Request, zoom bool) (anthropic.BetaMessageNewParams, error) {
	cfg := b.c.cfg
	p := anthropic.BetaMessageNewParams{Model: anthropic.Model(cfg.Model), MaxTokens: answerTokens}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	cache := anthropic.NewBetaCacheControlEphemeralParam()
	if req.System != "" {
		p.System = []anthropic.BetaTextBlockParam{{Text: req.System, CacheControl: cache}}
	}
	for _, t := range req.Tools {
		tool, err := claudeTool(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tool)
	}
	if req.verdict {
		p.Tools = append(p.Tools, anthropic.BetaToolUnionParam{OfTool: &anthropic.BetaToolParam{Name: verdictTool,
			Description: anthropic.String("Report whether the task was fully accomplished."),
			InputSchema: schemaParam(map[string]any{
				"success": map[string]any{"type": "boolean", "description": "true if the task was fully accomplished"},
				"summary": map[string]any{"type": "string", "description": "what was done and its result, or why the task cannot be completed"},
			}, []string{"success", "summary"})}})
		p.ToolChoice = anthropic.BetaToolChoiceUnionParam{OfTool: &anthropic.BetaToolChoiceToolParam{Name: verdictTool}}
	}
	if d := req.Computer; d != nil {
		if zoom {
			p.Tools = append(p.Tools, anthropic.BetaToolUnionParam{OfComputerUseTool20251124: &anthropic.BetaToolComputerUse20251124Param{
				DisplayWidthPx: int64(d.Width), DisplayHeightPx: int64(d.Height), EnableZoom: anthropic.Bool(true)}})
			p.Betas = []anthropic.AnthropicBeta{anthropic.AnthropicBetaComputerUse2025_11_24}
		} else {
			p.Tools = append(p.Tools, anthropic.BetaToolUnionParam{OfComputerUseTool20250124: &anthropic.BetaToolComputerUse20250124Param{
				DisplayWidthPx: int64(d.Width), DisplayHeightPx: int64(d.Height)}})
			p.Betas = []anthropic.AnthropicBeta{anthropic.AnthropicBetaComputerUse2025_01_24}
		}
	}
	effort := cfg.ReasoningEffort
	if req.NoReasoning || req.verdict {
		effort = "" // a forced tool takes no thinking
	}
	thinking := false
	if effort != "" && effort != "none" {
		thinking = true
		id := strings.ToLower(cfg.Model)
		adaptive := false
		for _, m := range adaptiveModels {
			adaptive = adaptive || strings.HasPrefix(id, m)
		}
		if adaptive {
			p.Thinking = anthropic.BetaThinkingConfigParamUnion{OfAdaptive: &anthropic.BetaThinkingConfigAdaptiveParam{}}
			p.OutputConfig = anthropic.BetaOutputConfigParam{Effort: anthropic.BetaOutputConfigEffort(effort)}
		} else {
			budget, ok := thinkingBudget[effort]
			if !ok {
				return p, fmt.Errorf("reasoning effort %q: want one of low, medium, high", effort)
			}
			p.Thinking = anthropic.BetaThinkingConfigParamUnion{OfEnabled: &anthropic.BetaThinkingConfigEnabledParam{BudgetTokens: budget}}
			p.MaxTokens = max(p.MaxTokens, budget+answerTokens)
			if !strings.Contains(id, "claude-3-7") {
				// Claude 4 on thinks between tool calls too, where an
				// agent decides each step.
				p.Betas = append(p.Betas, anthropic.AnthropicBetaInterleavedThinking2025_05_14)
			}
		}
	}
	marks := marksAll
	switch {
	case req.verdict:
		// Its tools (the verdict's) are not the agent's: nothing of its
		// messages is in the cache, nor is it sent again.
		marks = marksNone
	case req.ImagesDropNext || req.OneShot:
		marks = marksButLast
	}
	msgs, err := claudeMessages(normalize(req.Messages), thinking, marks)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	return p, nil
}

func (b *anthropicBackend) send(ctx context.Context, req *Request, onDelta func(Delta)) (Reply, error) {
	b.mu.Lock()
	zoom := b.zoom
	b.mu.Unlock()
	p, err := b.params(req, zoom)
	if err != nil {
		return Reply{}, &Error{Message: "the request has no Anthropic form: " + err.Error()}
	}
	r, err := b.attempt(ctx, p, req.Computer != nil, zoom, onDelta)
	if req.Computer != nil && b.refusedToolVersion(err, zoom) {
		// The model takes the other version of the computer tool: offer
		// it from now on, and ask again at once.
		b.mu.Lock()
		b.zoom, b.flipped = !zoom, true
		b.mu.Unlock()
		if p, err = b.params(req, !zoom); err != nil {
			return Reply{}, &Error{Message: "the request has no Anthropic form: " + err.Error()}
		}
		if onDelta != nil {
			onDelta(Delta{Restart: true})
		}
		r, err = b.attempt(ctx, p, true, !zoom, onDelta)
	}
	return r, err
}

// refusedToolVersion says the API refused the computer tool's version (a
// model that does not take it), the first time it does.
func (b *anthropicBackend) refusedToolVersion(err error, zoom bool) bool {
	b.mu.Lock()
	flipped := b.flipped
	b.mu.Unlock()
	a, ok := explain(err)
	if flipped || !ok || a.status != http.StatusBadRequest {
		return false
	}
	version := "computer_20250124"
	if zoom {
		version = "computer_20251124"
	}
	return strings.Contains(a.message, version)
}

// attempt sends one request and reads its answer.
func (b *anthropicBackend) attempt(ctx context.Context, p anthropic.BetaMessageNewParams, computer, zoom bool, onDelta func(Delta)) (Reply, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wd *watchdog
	if onDelta != nil {
		wd = newWatchdog(b.c.cfg.Timeout, cancel)
		defer wd.stop()
	}
	var body *boundedBody
	bound := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil && resp.Body != nil {
			body = &boundedBody{ReadCloser: resp.Body, left: maxAnswerBytes, wd: wd}
			resp.Body = body
		}
		return resp, err
	})
	var msg anthropic.BetaMessage
	if onDelta == nil {
		m, err := b.api.Beta.Messages.New(ctx, p, bound)
		if err != nil {
			return Reply{}, err
		}
		if !m.JSON.Type.Valid() {
			if err := b.notAMessage(m.RawJSON()); err != nil {
				return Reply{}, err
			}
		}
		msg = *m
	} else {
		stream := b.api.Beta.Messages.NewStreaming(ctx, p, bound)
		defer stream.Close()
		stopped := false
		for stream.Next() {
			ev := stream.Current()
			if err := msg.Accumulate(ev); err != nil {
				return Reply{}, errAnswerShape("Messages stream", err)
			}
			switch ev.Type {
			case "content_block_delta":
				switch ev.Delta.Type {
				case "text_delta":
					onDelta(Delta{Text: ev.Delta.Text})
				case "thinking_delta":
					onDelta(Delta{Reasoning: ev.Delta.Thinking})
				}
			case "message_stop":
				stopped = true
			}
		}
		err := stream.Err()
		if errors.Is(context.Cause(ctx), errStalled) {
			return Reply{}, wd.stalled()
		}
		if err != nil {
			return Reply{}, err
		}
		if !stopped {
			if msg.ID == "" && body != nil {
				// Not one of the Messages API's events came: what did?
				if err := b.notAMessage(firstData(body.head.String())); err != nil {
					return Reply{}, err
				}
			}
			return Reply{}, errIncomplete
		}
	}
	return claudeReply(msg, computer, zoom)
}

// boundedBody bounds an answer's size and tells the stall watchdog (when
// there is one) of every read; it keeps the answer's first bytes (head),
// to say what protocol an answer that is not Anthropic's is in.
type boundedBody struct {
	io.ReadCloser
	left int64
	wd   *watchdog
	head bytes.Buffer
}

// headBytes is how much of an answer boundedBody keeps.
const headBytes = 4096

func (r *boundedBody) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, fmt.Errorf("the answer is larger than %d MB", maxAnswerBytes>>20)
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.ReadCloser.Read(p)
	r.left -= int64(n)
	if k := min(n, headBytes-r.head.Len()); k > 0 {
		r.head.Write(p[:k])
	}
	if n > 0 && r.wd != nil {
		r.wd.alive()
	}
	return n, err
}

// firstData is the data of an event stream's first event, or the text
// itself when it is not one.
func firstData(s string) string {
	for line := range strings.Lines(s) {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
			return strings.TrimSpace(d)
		}
	}
	return s
}

// notAMessage is the error of an answer that is not one of the Messages
// API's: another protocol's, named when it can be; nil when it cannot
// tell.
func (b *anthropicBackend) notAMessage(raw string) error {
	var probe answerProbe
	if json.Unmarshal([]byte(raw), &probe) != nil {
		return nil
	}
	if p := protocolOf(probe); p != "" && p != "Anthropic Messages" {
		return wrongProtocol(b.c.cfg.Type, p)
	}
	return nil
}

// models lists Claude's models (GET /v1/models), with what the list says
// of each: its context window, whether it takes images and thinks.
func (b *anthropicBackend) models(ctx context.Context) ([]ModelInfo, error) {
	pager := b.api.Models.ListAutoPaging(ctx, anthropic.ModelListParams{Limit: anthropic.Int(100)})
	var out []ModelInfo
	for pager.Next() && len(out) < 1000 {
		m := pager.Current()
		info := ModelInfo{ID: m.ID, Name: m.DisplayName, Reasoning: ReasoningControl{Kind: "none", Efforts: []string{}}}
		if info.Name == "" {
			info.Name = m.ID
		}
		if m.JSON.MaxInputTokens.Valid() {
			info.ContextLength = int(m.MaxInputTokens)
		}
		caps := m.Capabilities
		if m.JSON.Capabilities.Valid() && caps.JSON.ImageInput.Valid() {
			v := caps.ImageInput.Supported
			info.Vision = &v
		}
		if (m.JSON.Capabilities.Valid() && caps.JSON.Thinking.Valid() && caps.Thinking.Supported) || thinkingModel(m.ID) {
			info.Reasoning = ReasoningControl{Kind: "effort", Efforts: []string{"low", "medium", "high"}}
		}
		out = append(out, info)
	}
	if err := pager.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// thinkingModel says a Claude model takes extended thinking, for a list
// that does not say: Claude 3.7 and every model from Claude 4 on.
func thinkingModel(id string) bool {
	id = strings.ToLower(id)
	if strings.Contains(id, "claude-3-7") {
		return true
	}
	return strings.HasPrefix(id, "claude-") && !strings.HasPrefix(id, "claude-3") && !strings.HasPrefix(id, "claude-2") && !strings.HasPrefix(id, "claude-instant")
}

var _ backend = (*anthropicBackend)(nil)
