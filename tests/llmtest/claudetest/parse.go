package claudetest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hivecrew/hivecrew/core/llm"
)

// request is a checked request to /v1/messages.
type request struct {
	body      string
	version   string
	betas     map[string]bool
	model     string
	maxTokens int
	stream    bool
	system    []*block
	messages  []*message
	tools     []*tool
	choice    toolChoice
	thinking  string // enabled, disabled or ""
	budget    int
	images    []Image
	units     []unit
	decode    func([]byte) decoded
	// zoomModels are the models that take computer_20251124; maxOutput
	// is the largest max_tokens.
	zoomModels []string
	maxOutput  int
}

type toolChoice struct {
	typ        string
	name       string
	noParallel bool
}

// tool is a tool definition of a request.
type tool struct {
	typ, name string
	// width, height and zoom are the computer tool's display and
	// enable_zoom.
	width, height int
	zoom          bool
	cache         *cacheControl
	canon         []byte
	tokens        int
}

type cacheControl struct{ ttl string }

var (
	topFields = []string{"model", "messages", "max_tokens", "system", "stream", "tools", "tool_choice", "thinking",
		"metadata", "stop_sequences", "temperature", "top_k", "top_p", "service_tier"}
	topUnmodelled = []string{"container", "context_management", "mcp_servers", "output_config", "output_format",
		"inference_geo", "speed", "cache_control", "compaction", "diagnostics", "fallbacks", "fallback_credit_token",
		"thread", "billing_policy"}
	toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

// computer tool versions and the beta each needs.
var computerBetas = map[string]string{
	"computer_20250124": "computer-use-2025-01-24",
	"computer_20251124": "computer-use-2025-11-24",
}

// parse checks a request body as the real API does.
func (s *Server) parse(raw []byte, h http.Header) (*request, error) {
	tree, err := decode(raw)
	if err != nil {
		return nil, err
	}
	f, err := object(tree, "", topFields, topUnmodelled)
	if err != nil {
		return nil, err
	}
	r := &request{body: string(raw), version: h.Get("anthropic-version"), betas: map[string]bool{}, decode: s.decodeImage,
		zoomModels: s.zoomModels(), maxOutput: s.maxOutput()}
	for _, v := range h.Values("anthropic-beta") {
		for b := range strings.SplitSeq(v, ",") {
			r.betas[strings.TrimSpace(b)] = true
		}
	}
	for _, step := range []func(*fields) error{r.parseLimits, r.parseSystem, r.parseTools, r.parseToolChoice,
		r.parseThinking, r.parseSampling, r.parseMessages} {
		if err := step(f); err != nil {
			return nil, err
		}
	}
	if !slices.Contains(s.models(), r.model) {
		return nil, &apiError{http.StatusNotFound, "not_found_error", "model: " + r.model}
	}
	return r, s.check(r)
}

// parseLimits reads model, stream, max_tokens, metadata, stop_sequences and
// service_tier.
func (r *request) parseLimits(f *fields) error {
	var err error
	if r.model, err = f.str("model", true); err != nil {
		return err
	}
	if r.stream, err = f.boolean("stream"); err != nil {
		return err
	}
	n, _, err := f.integer("max_tokens", true)
	switch {
	case err != nil:
		return err
	case n == 0:
		return notModelled("max_tokens: 0 (cache pre-warming)")
	case n < 0:
		return invalid("max_tokens: Input should be greater than or equal to 1")
	case n > r.maxOutput:
		return invalid("max_tokens: %d > %d, which is the maximum allowed number of output tokens for %s", n, r.maxOutput, r.model)
	}
	r.maxTokens = n
	if f.has("metadata") {
		m, err := object(f.m["metadata"], "metadata", []string{"user_id"}, nil)
		if err != nil {
			return err
		}
		if id, err := m.str("user_id", false); err != nil {
			return err
		} else if len(id) > 256 {
			return invalid("metadata.user_id: String should have at most 256 characters")
		}
	}
	seqs, err := f.list("stop_sequences", false)
	for i, seq := range seqs {
		if _, ok := seq.(string); !ok {
			return invalid("stop_sequences.%d: Input should be a valid string", i)
		}
	}
	if err != nil {
		return err
	}
	_, err = f.oneOf("service_tier", false, "auto", "standard_only")
	return err
}

// parseSystem reads the system prompt: a string or a list of text blocks.
func (r *request) parseSystem(f *fields) error {
	if !f.has("system") {
		return nil
	}
	if f.isString("system") {
		text, _ := f.str("system", false)
		r.system = []*block{{typ: "text", path: "system", text: text, canon: canonical(f.m["system"]), tokens: tokens(len(text))}}
		return nil
	}
	list, err := f.list("system", false)
	if err != nil {
		return invalid("system: Input should be a valid string or a list of text blocks")
	}
	for i, v := range list {
		b, err := r.parseBlock(v, join("system", itoa(i)), []string{"text"})
		if err != nil {
			return err
		}
		r.system = append(r.system, b)
	}
	return nil
}

// isTitle reports whether the request asks for a task's title.
func (r *request) isTitle() bool {
	for _, b := range r.system {
		if strings.Contains(b.text, llm.TitlePrompt) {
			return true
		}
	}
	return false
}

func (r *request) parseTools(f *fields) error {
	list, err := f.list("tools", false)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, v := range list {
		t, err := r.parseTool(v, join("tools", itoa(i)))
		if err != nil {
			return err
		}
		if seen[t.name] {
			return invalid("tools: Tool names must be unique.")
		}
		seen[t.name] = true
		r.tools = append(r.tools, t)
	}
	return nil
}

func (r *request) parseTool(v any, path string) (*tool, error) {
	typ := typeOf(v)
	if typ == "" {
		typ = "custom"
	}
	var (
		t   = &tool{typ: typ, canon: canonical(v, "cache_control")}
		f   *fields
		err error
	)
	full, _ := json.Marshal(v)
	t.tokens = tokens(len(full))
	at := join(path, typ)
	switch {
	case typ == "custom":
		if f, err = object(v, at, []string{"type", "name", "description", "input_schema", "cache_control", "strict"},
			[]string{"defer_loading", "input_examples", "allowed_callers", "eager_input_streaming"}); err != nil {
			return nil, err
		}
		if err = customTool(f); err != nil {
			return nil, err
		}
	case computerBetas[typ] != "":
		if f, err = r.computerTool(v, path, typ, t); err != nil {
			return nil, err
		}
	case strings.HasPrefix(typ, "bash_") || strings.HasPrefix(typ, "text_editor_") || strings.HasPrefix(typ, "web_") ||
		strings.HasPrefix(typ, "code_execution_") || strings.HasPrefix(typ, "memory_") || strings.HasPrefix(typ, "computer_"):
		return nil, notModelled(path + " (tool type " + typ + ")")
	default:
		return nil, invalid("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'custom', 'computer_20250124', 'computer_20251124', 'bash_20250124', 'text_editor_20250728', 'web_search_20250305'", path, typ)
	}
	if t.name, err = f.str("name", true); err != nil {
		return nil, err
	}
	if !toolName.MatchString(t.name) {
		return nil, invalid("%s: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", f.at("name"))
	}
	t.cache, err = parseCache(f)
	return t, err
}

// customTool checks a custom tool's description and input_schema.
func customTool(f *fields) error {
	if _, err := f.str("description", false); err != nil {
		return err
	}
	if _, err := f.boolean("strict"); err != nil {
		return err
	}
	if err := f.required("input_schema"); err != nil {
		return err
	}
	m, ok := f.m["input_schema"].(map[string]any) // any keyword may be in a schema
	if !ok {
		return invalid("%s: Input should be a valid dictionary", f.at("input_schema"))
	}
	schema := &fields{m: m, path: f.at("input_schema")}
	if _, err := schema.oneOf("type", true, "object"); err != nil {
		return err
	}
	var js jsonschema.Schema
	raw, _ := json.Marshal(m)
	if err := json.Unmarshal(raw, &js); err != nil {
		return invalidSchema(f)
	}
	if _, err := js.Resolve(nil); err != nil {
		return invalidSchema(f)
	}
	return nil
}

func invalidSchema(f *fields) error {
	return invalid("%s: JSON schema is invalid. It must match JSON Schema draft 2020-12 (https://json-schema.org/draft/2020-12). Learn more about tool use at https://docs.claude.com/en/docs/tool-use.", f.at("input_schema"))
}

// computerTool checks the computer tool: its fields, its beta, its model.
func (r *request) computerTool(v any, path, typ string, t *tool) (*fields, error) {
	allowed := []string{"type", "name", "display_width_px", "display_height_px", "display_number", "cache_control"}
	if typ == "computer_20251124" {
		allowed = append(allowed, "enable_zoom")
	}
	if beta := computerBetas[typ]; !r.betas[beta] {
		return nil, invalid("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'custom', 'bash_20250124', 'text_editor_20250728', 'web_search_20250305' (the tool needs `%s` in the `anthropic-beta` header)", path, typ, beta)
	}
	if typ == "computer_20251124" && !slices.Contains(r.zoomModels, r.model) {
		return nil, invalid("%s: '%s' does not support the computer_20251124 tool", path, r.model)
	}
	f, err := object(v, join(path, typ), allowed, []string{"defer_loading", "input_examples", "allowed_callers", "strict"})
	if err != nil {
		return nil, err
	}
	if name, err := f.str("name", true); err != nil {
		return nil, err
	} else if name != "computer" {
		return nil, invalid("%s: Input should be 'computer'", f.at("name"))
	}
	for _, d := range []struct {
		key string
		dst *int
	}{{"display_width_px", &t.width}, {"display_height_px", &t.height}} {
		n, _, err := f.integer(d.key, true)
		if err != nil {
			return nil, err
		}
		if n < 1 {
			return nil, invalid("%s: Input should be greater than or equal to 1", f.at(d.key))
		}
		*d.dst = n
	}
	if _, _, err := f.integer("display_number", false); err != nil {
		return nil, err
	}
	if t.zoom, err = f.boolean("enable_zoom"); err != nil {
		return nil, err
	}
	return f, nil
}

func (r *request) parseToolChoice(f *fields) error {
	if !f.has("tool_choice") {
		return nil
	}
	c, err := object(f.m["tool_choice"], "tool_choice", []string{"type", "name", "disable_parallel_tool_use"}, nil)
	if err != nil {
		return err
	}
	if r.choice.typ, err = c.oneOf("type", true, "auto", "any", "tool", "none"); err != nil {
		return err
	}
	if r.choice.noParallel, err = c.boolean("disable_parallel_tool_use"); err != nil {
		return err
	}
	if r.choice.typ != "tool" {
		if c.has("name") {
			return invalid("tool_choice.%s.name: Extra inputs are not permitted", r.choice.typ)
		}
		if r.choice.typ == "any" && len(r.tools) == 0 {
			return invalid("tool_choice: `any` requires tools to be provided")
		}
		return nil
	}
	if r.choice.name, err = c.str("name", true); err != nil {
		return err
	}
	if r.tool(r.choice.name) == nil {
		return invalid("tool_choice.name: Tool '%s' not found in provided tools", r.choice.name)
	}
	return nil
}

func (r *request) parseThinking(f *fields) error {
	if !f.has("thinking") {
		return nil
	}
	typ := typeOf(f.m["thinking"])
	switch typ {
	case "disabled":
		_, err := object(f.m["thinking"], "thinking.disabled", []string{"type"}, nil)
		r.thinking = "disabled"
		return err
	case "adaptive":
		return notModelled("thinking.adaptive")
	case "enabled":
	default:
		return invalid("thinking: Input tag '%s' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'", typ)
	}
	t, err := object(f.m["thinking"], "thinking.enabled", []string{"type", "budget_tokens"}, []string{"display", "block_binding"})
	if err != nil {
		return err
	}
	r.thinking = "enabled"
	if r.budget, _, err = t.integer("budget_tokens", true); err != nil {
		return err
	}
	if r.budget < 1024 {
		return invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
	}
	if r.budget >= r.maxTokens && !r.interleaved() {
		return invalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
	}
	if r.forcedTool() != "" {
		return invalid("Thinking may not be enabled when tool_choice forces tool use.")
	}
	return nil
}

// parseSampling checks temperature, top_k and top_p, alone and with
// thinking; API version 2026-10-21 has none of them.
func (r *request) parseSampling(f *fields) error {
	if r.version == version2026 {
		for _, k := range []string{"temperature", "top_k", "top_p"} {
			if _, ok := f.m[k]; ok {
				return invalid("%s: Extra inputs are not permitted", k)
			}
		}
	}
	temp, hasTemp, err := f.number("temperature")
	if err != nil {
		return err
	}
	topP, hasTopP, err := f.number("top_p")
	if err != nil {
		return err
	}
	topK, hasTopK, err := f.integer("top_k", false)
	switch {
	case err != nil:
		return err
	case hasTemp && (temp < 0 || temp > 1):
		return invalid("temperature: Input should be less than or equal to 1 and greater than or equal to 0")
	case hasTopP && (topP < 0 || topP > 1):
		return invalid("top_p: Input should be less than or equal to 1 and greater than or equal to 0")
	case hasTopK && topK < 0:
		return invalid("top_k: Input should be greater than or equal to 0")
	case hasTemp && hasTopP:
		return invalid("`temperature` and `top_p` cannot both be specified for this model. Please use only one.")
	}
	if r.thinking != "enabled" {
		return nil
	}
	const doc = " Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility"
	switch {
	case hasTemp && temp != 1:
		return invalid("`temperature` may only be set to 1 when thinking is enabled." + doc)
	case hasTopK:
		return invalid("`top_k` is not supported when thinking is enabled." + doc)
	case hasTopP && topP < 0.95:
		return invalid("`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled." + doc)
	}
	return nil
}

// parseCache reads a block's cache_control.
func parseCache(f *fields) (*cacheControl, error) {
	if !f.has("cache_control") {
		return nil, nil
	}
	c, err := object(f.m["cache_control"], f.at("cache_control"), []string{"type", "ttl"}, []string{"scope"})
	if err != nil {
		return nil, err
	}
	if _, err := c.oneOf("type", true, "ephemeral"); err != nil {
		return nil, err
	}
	ttl, err := c.oneOf("ttl", false, "5m", "1h")
	if ttl == "" {
		ttl = "5m"
	}
	return &cacheControl{ttl: ttl}, err
}

// tool returns the request's tool of that name.
func (r *request) tool(name string) *tool {
	for _, t := range r.tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

// forcedTool is the tool tool_choice forces: its named tool, or the first
// tool for "any"; "" when it forces none.
func (r *request) forcedTool() string {
	switch r.choice.typ {
	case "tool":
		return r.choice.name
	case "any":
		return r.tools[0].name
	}
	return ""
}

func (r *request) interleaved() bool { return r.betas["interleaved-thinking-2025-05-14"] }
