package llm

import (
	"encoding/json"
	"fmt"
	"slices"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
)

// claudeTool is a function tool in Anthropic's form.
func claudeTool(t Tool) (anthropic.BetaToolUnionParam, error) {
	var schema map[string]any
	if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
		return anthropic.BetaToolUnionParam{}, fmt.Errorf("tool %s: its parameters are not a JSON schema object", t.Name)
	}
	var required []string
	if r, ok := schema["required"].([]any); ok {
		for _, x := range r {
			if s, ok := x.(string); ok {
				required = append(required, s)
			}
		}
	}
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	in := schemaParam(props, required)
	for k, v := range schema {
		if k != "type" && k != "properties" && k != "required" {
			if in.ExtraFields == nil {
				in.ExtraFields = map[string]any{}
			}
			in.ExtraFields[k] = v
		}
	}
	tool := &anthropic.BetaToolParam{Name: t.Name, InputSchema: in}
	if t.Description != "" {
		tool.Description = anthropic.String(t.Description)
	}
	return anthropic.BetaToolUnionParam{OfTool: tool}, nil
}

func schemaParam(props map[string]any, required []string) anthropic.BetaToolInputSchemaParam {
	return anthropic.BetaToolInputSchemaParam{Properties: props, Required: required}
}

// claudeMessages is the conversation in Anthropic's form: consecutive
// messages of one role are one turn (tool results first), reasoning of
// other backends is left out (and Claude's own when thinking is off: the
// API ignores it then), and turns carry cache breakpoints (claudeMarks).
func claudeMessages(msgs []Message, thinking bool, marks cacheMarks) ([]anthropic.BetaMessageParam, error) {
	type turn struct {
		role   Role
		blocks []anthropic.BetaContentBlockParamUnion
	}
	var turns []turn
	firstImage := -1 // the turn of the oldest image
	for _, m := range msgs {
		var blocks, results []anthropic.BetaContentBlockParamUnion
		for _, bl := range m.Content {
			cb, isResult, err := claudeBlock(bl, thinking)
			if err != nil {
				return nil, err
			}
			switch {
			case cb == nil:
			case isResult:
				results = append(results, *cb)
			default:
				blocks = append(blocks, *cb)
			}
		}
		blocks = append(results, blocks...)
		if len(blocks) == 0 {
			continue
		}
		switch n := len(turns); {
		case n > 0 && turns[n-1].role == m.Role && len(results) > 0:
			// Results must lead their turn.
			turns[n-1].blocks = append(results, append(turns[n-1].blocks, blocks[len(results):]...)...)
		case n > 0 && turns[n-1].role == m.Role:
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
		default:
			turns = append(turns, turn{role: m.Role, blocks: blocks})
		}
		if firstImage < 0 && m.HasImage() {
			firstImage = len(turns) - 1
		}
	}
	out := make([]anthropic.BetaMessageParam, len(turns))
	roles := make([]Role, len(turns))
	for i, t := range turns {
		roles[i] = t.role
	}
	markable := func(i int) bool {
		b := turns[i].blocks[len(turns[i].blocks)-1]
		return b.OfText != nil || b.OfImage != nil || b.OfToolResult != nil || b.OfToolUse != nil
	}
	if marks != marksNone {
		for _, i := range claudeMarks(roles, firstImage, marks == marksButLast, markable) {
			cacheMark(&turns[i].blocks[len(turns[i].blocks)-1])
		}
	}
	for i := len(turns) - 1; i >= 0; i-- {
		t := turns[i]
		if t.role == RoleUser {
			out[i] = anthropic.BetaMessageParam{OfUser: &anthropic.BetaUserMessageParam{Content: t.blocks}}
		} else {
			out[i] = anthropic.BetaMessageParam{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: t.blocks}}
		}
	}
	return out, nil
}

// cacheMarks says which of a request's turns carry cache breakpoints.
type cacheMarks int

const (
	// marksAll: those claudeMarks picks.
	marksAll cacheMarks = iota
	// marksButLast: those but the last user turn, which is not read again.
	marksButLast
	// marksNone: none.
	marksNone
)

// claudeMarks are the turns (by index) whose last block carries a cache
// breakpoint, beside the system prompt's (4 in all, the API's most):
//   - the last two user turns: the next request, the same one step on,
//     reads all before its newest turns from the cache;
//   - the turn right before the one holding the oldest image sent (the
//     assistant's call whose result shows it, mostly): the prefix that
//     stays when Window drops the images, read whole at that step however
//     many blocks the last steps made; only what follows the first image
//     dropped is written again;
//   - but not the last user turn when the next request drops the images
//     (dropNext): nothing from the oldest image on is read again, so the
//     newest turn, a screenshot mostly, is sent as input (1x) rather than
//     written to the cache (1.25x).
//
// firstImage is the turn of the oldest image, -1 for none; markable says
// whether a turn's last block takes a breakpoint (a thinking block does
// not: the user turn before it is marked instead).
func claudeMarks(roles []Role, firstImage int, dropNext bool, markable func(int) bool) []int {
	var users []int
	for i, r := range roles {
		if r == RoleUser {
			users = append(users, i)
		}
	}
	var marks []int
	add := func(i int) {
		if i >= 0 && !slices.Contains(marks, i) {
			marks = append(marks, i)
		}
	}
	for i := firstImage - 1; i >= 0; i-- {
		if roles[i] == RoleUser || markable(i) {
			add(i)
			break
		}
	}
	if n := len(users); n >= 2 {
		add(users[n-2])
	}
	if n := len(users); n >= 1 && !dropNext {
		add(users[n-1])
	}
	return marks
}

// cacheMark puts a cache breakpoint on a block.
func cacheMark(b *anthropic.BetaContentBlockParamUnion) {
	c := anthropic.NewBetaCacheControlEphemeralParam()
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = c
	case b.OfImage != nil:
		b.OfImage.CacheControl = c
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = c
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = c
	}
}

// claudeBlock is one block in Anthropic's form; nil for one it leaves out.
func claudeBlock(bl Block, thinking bool) (*anthropic.BetaContentBlockParamUnion, bool, error) {
	switch bl.Type {
	case BlockText:
		if bl.Text == "" {
			return nil, false, nil
		}
		return &anthropic.BetaContentBlockParamUnion{OfText: &anthropic.BetaTextBlockParam{Text: bl.Text}}, false, nil
	case BlockImage:
		return &anthropic.BetaContentBlockParamUnion{OfImage: claudeImage(bl.Image)}, false, nil
	case BlockReasoning:
		r := bl.Reasoning
		switch {
		case r.Provider != NativeAnthropic || !thinking:
			return nil, false, nil
		case r.Redacted != "":
			return &anthropic.BetaContentBlockParamUnion{OfRedactedThinking: &anthropic.BetaRedactedThinkingBlockParam{Data: r.Redacted}}, false, nil
		case r.Signature != "":
			return &anthropic.BetaContentBlockParamUnion{OfThinking: &anthropic.BetaThinkingBlockParam{Thinking: r.Text, Signature: r.Signature}}, false, nil
		}
		return nil, false, nil
	case BlockToolCall:
		args := bl.Call.Args
		if !json.Valid(args) {
			// Empty, or cut short by max_tokens: the call went back to the
			// model as an error; its input goes back as an empty object.
			args = json.RawMessage("{}")
		}
		return &anthropic.BetaContentBlockParamUnion{OfToolUse: &anthropic.BetaToolUseBlockParam{ID: bl.Call.ID, Name: bl.Call.Name, Input: args}}, false, nil
	case BlockToolResult:
		r := bl.Result
		tr := &anthropic.BetaToolResultBlockParam{ToolUseID: r.CallID}
		if r.IsError {
			tr.IsError = anthropic.Bool(true)
		}
		for _, c := range r.Content {
			switch {
			case c.Type == BlockImage:
				tr.Content = append(tr.Content, anthropic.BetaToolResultBlockParamContentUnion{OfImage: claudeImage(c.Image)})
			case c.Text != "":
				tr.Content = append(tr.Content, anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: c.Text}})
			}
		}
		return &anthropic.BetaContentBlockParamUnion{OfToolResult: tr}, true, nil
	}
	return nil, false, fmt.Errorf("a block of type %q has no Anthropic form", bl.Type)
}

func claudeImage(img *Image) *anthropic.BetaImageBlockParam {
	return &anthropic.BetaImageBlockParam{Source: anthropic.BetaImageBlockParamSourceUnion{OfBase64: &anthropic.BetaBase64ImageSourceParam{
		Data: img.Data, MediaType: anthropic.BetaBase64ImageSourceMediaType(img.MediaType)}}}
}

// claudeReply is Claude's message in neutral form.
func claudeReply(msg anthropic.BetaMessage, computer, zoom bool) (Reply, error) {
	if msg.StopReason == "refusal" {
		return Reply{}, refusal("stop_reason refusal")
	}
	var blocks []Block
	for _, cb := range msg.Content {
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				blocks = append(blocks, Text(cb.Text))
			}
		case "thinking":
			blocks = append(blocks, Block{Type: BlockReasoning, Reasoning: &Reasoning{Provider: NativeAnthropic, Text: cb.Thinking, Signature: cb.Signature}})
		case "redacted_thinking":
			blocks = append(blocks, Block{Type: BlockReasoning, Reasoning: &Reasoning{Provider: NativeAnthropic, Redacted: cb.Data}})
		case "tool_use":
			call := &ToolCall{ID: cb.ID, Name: cb.Name, Args: json.RawMessage(cb.Input)}
			if computer && cb.Name == ComputerTool {
				call.Native = NativeAnthropic
				action, err := ParseClaudeAction(call.Args, zoom)
				if err != nil {
					call.Invalid = err.Error()
				}
				call.Action = action
			}
			blocks = append(blocks, Block{Type: BlockToolCall, Call: call})
		}
	}
	if len(blocks) == 0 && msg.StopReason == "" {
		return Reply{}, errNoChoices
	}
	u := msg.Usage
	usage := Usage{Prompt: int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), Completion: int(u.OutputTokens),
		CacheRead: int(u.CacheReadInputTokens), CacheWrite: int(u.CacheCreationInputTokens)}
	usage.Total = usage.Prompt + usage.Completion
	stop := ""
	if msg.StopReason == "max_tokens" {
		stop = StopLength
	}
	return newReply(Message{Role: RoleAssistant, Content: blocks}, usage, stop), nil
}
