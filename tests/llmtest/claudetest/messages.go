package claudetest

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// message is one message of a request.
type message struct {
	role   string
	path   string
	blocks []*block
}

// block is a content block of a request (of a message, of the system
// prompt, of a tool_result).
type block struct {
	typ       string
	path      string
	text      string // a text's text, a thinking's thinking
	signature string
	data      string
	id, name  string
	input     map[string]any
	toolUseID string
	content   []*block // a tool_result's
	image     *Image
	cache     *cacheControl
	canon     []byte
	tokens    int
}

var (
	// messageTags are the content block types of messages.
	messageTags = []string{"text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use",
		"tool_result", "server_tool_use", "web_search_tool_result"}
	// unmodelledBlocks are real block types this fake does not simulate.
	unmodelledBlocks = []string{"document", "search_result", "server_tool_use", "web_search_tool_result",
		"web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
		"text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result", "container_upload", "compaction",
		"tool_reference"}
	// roleBlocks are the block types each role may send.
	roleBlocks = map[string][]string{
		"user":      {"text", "image", "tool_result"},
		"assistant": {"text", "tool_use", "thinking", "redacted_thinking"},
	}
	toolUseID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

func itoa(i int) string { return strconv.Itoa(i) }

func (r *request) parseMessages(f *fields) error {
	list, err := f.list("messages", true)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return invalid("messages: at least one message is required")
	}
	for i, v := range list {
		path := join("messages", itoa(i))
		m, err := object(v, path, []string{"role", "content"}, nil)
		if err != nil {
			return err
		}
		msg := &message{path: path}
		if msg.role, err = m.oneOf("role", true, "user", "assistant"); err != nil {
			return err
		}
		if err := m.required("content"); err != nil {
			return err
		}
		if err := r.parseContent(m, msg, i == len(list)-1); err != nil {
			return err
		}
		r.messages = append(r.messages, msg)
	}
	if r.messages[0].role != "user" {
		return invalid(`messages: first message must use the "user" role`)
	}
	return nil
}

// parseContent reads a message's content: a string or a list of blocks.
func (r *request) parseContent(m *fields, msg *message, last bool) error {
	empty := invalid("%s: all messages must have non-empty content except for the optional final assistant message", msg.path)
	if m.isString("content") {
		text, _ := m.str("content", true)
		if text == "" && !(last && msg.role == "assistant") {
			return empty
		}
		msg.blocks = []*block{{typ: "text", path: m.at("content"), text: text, canon: canonical(m.m["content"]), tokens: tokens(len(text))}}
		return nil
	}
	list, err := m.list("content", true)
	if err != nil {
		return err
	}
	if len(list) == 0 && !(last && msg.role == "assistant") {
		return empty
	}
	for k, v := range list {
		b, err := r.parseBlock(v, join(m.at("content"), itoa(k)), messageTags)
		if err != nil {
			return err
		}
		if !slices.Contains(roleBlocks[msg.role], b.typ) {
			return invalid("%s: `%s` blocks are not allowed in `%s` messages", b.path, b.typ, msg.role)
		}
		msg.blocks = append(msg.blocks, b)
	}
	return nil
}

// parseBlock reads a content block whose type is one of tags.
func (r *request) parseBlock(v any, path string, tags []string) (*block, error) {
	if _, ok := v.(map[string]any); !ok {
		return nil, invalid("%s: Input should be a valid dictionary", path)
	}
	typ := typeOf(v)
	if typ == "" {
		return nil, invalid("%s.type: Field required", path)
	}
	if slices.Contains(unmodelledBlocks, typ) {
		return nil, notModelled(join(path, typ))
	}
	if !slices.Contains(tags, typ) {
		return nil, invalid("%s: Input tag '%s' found using 'type' does not match any of the expected tags: '%s'", path, typ, strings.Join(tags, "', '"))
	}
	b := &block{typ: typ, path: path, canon: canonical(v, "cache_control")}
	at := join(path, typ)
	var (
		f   *fields
		err error
	)
	switch typ {
	case "text":
		f, err = r.textBlock(v, at, b)
	case "image":
		f, err = r.imageBlock(v, at, b)
	case "tool_use":
		f, err = toolUseBlock(v, at, b)
	case "tool_result":
		f, err = r.toolResultBlock(v, at, b)
	case "thinking":
		if f, err = object(v, at, []string{"type", "thinking", "signature"}, nil); err == nil {
			if b.text, err = f.str("thinking", true); err == nil {
				b.signature, err = f.str("signature", true)
			}
		}
		b.tokens = tokens(len(b.text))
	case "redacted_thinking":
		if f, err = object(v, at, []string{"type", "data"}, nil); err == nil {
			b.data, err = f.str("data", true)
		}
		b.tokens = tokens(len(b.data))
	}
	if err != nil {
		return nil, err
	}
	if f.has("cache_control") {
		b.cache, err = parseCache(f)
	}
	return b, err
}

func (r *request) textBlock(v any, at string, b *block) (*fields, error) {
	f, err := object(v, at, []string{"type", "text", "cache_control", "citations"}, nil)
	if err != nil {
		return nil, err
	}
	if b.text, err = f.str("text", true); err != nil {
		return nil, err
	}
	where, _, _ := strings.Cut(at, ".")
	switch {
	case b.text == "":
		return nil, invalid("%s: text content blocks must be non-empty", where)
	case strings.TrimSpace(b.text) == "":
		return nil, invalid("%s: text content blocks must contain non-whitespace text", where)
	}
	if c, err := f.list("citations", false); err != nil || len(c) > 0 {
		return nil, notModelled(f.at("citations"))
	}
	b.tokens = tokens(len(b.text))
	return f, nil
}

func toolUseBlock(v any, at string, b *block) (*fields, error) {
	f, err := object(v, at, []string{"type", "id", "name", "input", "cache_control"}, []string{"caller", "toolset_name"})
	if err != nil {
		return nil, err
	}
	if b.id, err = f.str("id", true); err != nil {
		return nil, err
	}
	if !toolUseID.MatchString(b.id) {
		return nil, invalid("%s: String should match pattern '^[a-zA-Z0-9_-]+$'", f.at("id"))
	}
	if b.name, err = f.str("name", true); err != nil {
		return nil, err
	}
	if err := f.required("input"); err != nil {
		return nil, err
	}
	input, ok := f.m["input"].(map[string]any)
	if !ok {
		return nil, invalid("%s: Input should be a valid dictionary", f.at("input"))
	}
	b.input = input
	raw, _ := json.Marshal(input)
	b.tokens = tokens(len(b.name) + len(raw))
	return f, nil
}

func (r *request) toolResultBlock(v any, at string, b *block) (*fields, error) {
	f, err := object(v, at, []string{"type", "tool_use_id", "content", "is_error", "cache_control"}, []string{"toolset_name"})
	if err != nil {
		return nil, err
	}
	if b.toolUseID, err = f.str("tool_use_id", true); err != nil {
		return nil, err
	}
	if _, err := f.boolean("is_error"); err != nil {
		return nil, err
	}
	if f.isString("content") {
		text, _ := f.str("content", false)
		b.tokens = tokens(len(text))
		return f, nil
	}
	list, err := f.list("content", false)
	if err != nil {
		return nil, invalid("%s: Input should be a valid string or a list of blocks", f.at("content"))
	}
	for j, e := range list {
		c, err := r.parseBlock(e, join(f.at("content"), itoa(j)), []string{"text", "image"})
		if err != nil {
			return nil, err
		}
		b.content = append(b.content, c)
		b.tokens += c.tokens
	}
	return f, nil
}

// blocks calls fn on every block of the request's messages, nested ones
// included, with the index of its message.
func (r *request) blocks(fn func(i int, b *block)) {
	for i, m := range r.messages {
		for _, b := range m.blocks {
			fn(i, b)
			for _, c := range b.content {
				fn(i, c)
			}
		}
	}
}

// continuesTurn reports whether the request continues a tool loop: its
// last message is the user's and carries tool results.
func (r *request) continuesTurn() bool {
	last := r.messages[len(r.messages)-1]
	if last.role != "user" {
		return false
	}
	for _, b := range last.blocks {
		if b.typ == "tool_result" {
			return true
		}
	}
	return false
}

// thinksNow reports whether the model's answer to the request begins with
// thinking: thinking is on, and the answer starts a turn or interleaved
// thinking lets the model think after tool results.
func (r *request) thinksNow() bool {
	return r.thinking == "enabled" && (r.interleaved() || !r.continuesTurn())
}
