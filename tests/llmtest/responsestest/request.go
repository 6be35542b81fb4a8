package responsestest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// request is a parsed POST /v1/responses body: every check that needs no
// state of the server (the shape of the body, the model, the tools, the
// images) is made by parse; conversation.go makes the others.
type request struct {
	Model              string
	Input              []*item
	Instructions       string
	Tools              []tool
	toolsRaw           json.RawMessage
	ToolChoice         json.RawMessage
	ParallelToolCalls  bool
	Store              bool
	Stream             bool
	Include            []string
	Truncation         string
	PreviousResponseID string
	Format             textFormat
	Reasoning          struct{ Effort, Summary string }
	MaxOutputTokens    int
	images             []Image
}

// Top-level parameters of the Responses API; those this server cannot
// honour are refused by name in parse.
var knownParams = set("model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
	"store", "stream", "stream_options", "include", "reasoning", "text", "truncation", "max_output_tokens",
	"max_tool_calls", "previous_response_id", "metadata", "temperature", "top_p", "top_logprobs", "user",
	"service_tier", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "prompt_cache_options",
	"background", "conversation", "prompt", "context_management", "moderation")

var includeValues = []string{"code_interpreter_call.outputs", "computer_call_output.output.image_url",
	"file_search_call.results", "message.input_image.image_url", "message.output_text.logprobs",
	"reasoning.encrypted_content", "web_search_call.action.sources"}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// parser parses one request for s.
type parser struct {
	s     *Server
	model string
	req   *request
}

// parse checks body as OpenAI does before the model sees it.
func (s *Server) parse(body []byte) (*request, *apiError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return nil, invalid("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)")
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !knownParams[k] {
			return nil, unknownParam(k)
		}
	}
	req := &request{Store: true, ParallelToolCalls: true, Truncation: "disabled"}
	var background bool
	var temperature, topP *float64
	for _, f := range []struct {
		name string
		dst  any
	}{{"model", &req.Model}, {"instructions", &req.Instructions}, {"store", &req.Store}, {"stream", &req.Stream},
		{"include", &req.Include}, {"truncation", &req.Truncation}, {"previous_response_id", &req.PreviousResponseID},
		{"max_output_tokens", &req.MaxOutputTokens}, {"parallel_tool_calls", &req.ParallelToolCalls},
		{"background", &background}, {"temperature", &temperature}, {"top_p", &topP}} {
		if e := decodeField(raw, f.name, f.dst); e != nil {
			return nil, e
		}
	}
	if req.Model == "" {
		return nil, missing("model")
	}
	if !slices.Contains(s.models(), req.Model) {
		return nil, notFound("model", "model_not_found", "The model `%s` does not exist or you do not have access to it.", req.Model)
	}
	switch {
	case background:
		return nil, unsimulated("background", "background responses")
	case raw["conversation"] != nil && string(raw["conversation"]) != "null":
		return nil, unsimulated("conversation", "conversations")
	case raw["prompt"] != nil && string(raw["prompt"]) != "null":
		return nil, unsimulated("prompt", "prompt templates")
	case reasoningModel(req.Model) && temperature != nil:
		return nil, invalid("temperature", "unsupported_parameter", "Unsupported parameter: 'temperature' is not supported with this model.")
	case reasoningModel(req.Model) && topP != nil:
		return nil, invalid("top_p", "unsupported_parameter", "Unsupported parameter: 'top_p' is not supported with this model.")
	case raw["max_output_tokens"] != nil && string(raw["max_output_tokens"]) != "null" && req.MaxOutputTokens < 16:
		return nil, invalid("max_output_tokens", "integer_below_min_value",
			"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got %d instead.", req.MaxOutputTokens)
	}
	if e := oneOf("truncation", req.Truncation, "auto", "disabled"); e != nil {
		return nil, e
	}
	for i, inc := range req.Include {
		if e := oneOf(fmt.Sprintf("include[%d]", i), inc, includeValues...); e != nil {
			return nil, e
		}
	}
	p := &parser{s: s, model: req.Model, req: req}
	steps := []func(map[string]json.RawMessage) *apiError{p.reasoning, p.tools, p.toolChoice, p.text, p.input}
	for _, step := range steps {
		if e := step(raw); e != nil {
			return nil, e
		}
	}
	return req, nil
}

func (p *parser) reasoning(raw map[string]json.RawMessage) *apiError {
	var r map[string]json.RawMessage
	if e := decodeField(raw, "reasoning", &r); e != nil {
		return e
	}
	for _, k := range slices.Sorted(maps.Keys(r)) {
		var dst *string
		switch k {
		case "effort":
			dst = &p.req.Reasoning.Effort
		case "summary", "generate_summary":
			dst = &p.req.Reasoning.Summary
		default:
			return unknownParam("reasoning." + k)
		}
		if e := decodeField(r, k, dst); e != nil {
			return e
		}
	}
	if e := optional("reasoning.effort", p.req.Reasoning.Effort, "none", "minimal", "low", "medium", "high", "xhigh"); e != nil {
		return e
	}
	return optional("reasoning.summary", p.req.Reasoning.Summary, "auto", "concise", "detailed")
}

// tool is one entry of tools.
type tool struct {
	Type          string         `json:"type"`
	Name          string         `json:"name"`
	Description   string         `json:"description"`
	Parameters    map[string]any `json:"parameters"`
	Strict        *bool          `json:"strict"`
	DisplayWidth  *int           `json:"display_width"`
	DisplayHeight *int           `json:"display_height"`
	Environment   string         `json:"environment"`
}

var toolKeys = map[string]map[string]bool{
	"function":             set("type", "name", "description", "parameters", "strict"),
	"computer_use_preview": set("type", "display_width", "display_height", "environment"),
}

func (p *parser) tools(raw map[string]json.RawMessage) *apiError {
	var list []json.RawMessage
	if e := decodeField(raw, "tools", &list); e != nil {
		return e
	}
	p.req.toolsRaw = raw["tools"]
	names := map[string]bool{}
	computers := 0
	for i, el := range list {
		path := fmt.Sprintf("tools[%d]", i)
		var t tool
		keys, e := decodeObject(path, el, &t)
		if e != nil {
			return e
		}
		allowed := toolKeys[t.Type]
		switch {
		case t.Type == "":
			return missing(path + ".type")
		case allowed == nil:
			return unsimulated(path+".type", "tools of type '%s' (only 'function' and 'computer_use_preview')", t.Type)
		}
		for _, k := range keys {
			if !allowed[k] {
				return unknownParam(path + "." + k)
			}
		}
		if t.Type == "computer_use_preview" {
			computers++
			if e := checkComputerTool(path, t); e != nil {
				return e
			}
			p.req.Tools = append(p.req.Tools, t)
			continue
		}
		switch {
		case t.Name == "":
			return missing(path + ".name")
		case !namePattern.MatchString(t.Name):
			return invalid(path+".name", "invalid_value", "Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", path)
		case names[t.Name]:
			return invalid(path+".name", "invalid_value", "Invalid 'tools': duplicate function name '%s'. Function names must be unique.", t.Name)
		}
		names[t.Name] = true
		// Function tools are strict unless they say otherwise.
		strict := t.Strict == nil || *t.Strict
		if msg := checkSchema(t.Parameters, strict); msg != "" {
			return invalid(path+".parameters", "invalid_function_parameters", "Invalid schema for function '%s': %s", t.Name, msg)
		}
		p.req.Tools = append(p.req.Tools, t)
	}
	cua := strings.HasPrefix(p.model, "computer-use-preview")
	switch {
	case cua && computers != 1:
		return invalid("tools", "", "The model '%s' requires exactly one tool of type 'computer_use_preview' (got %d).", p.model, computers)
	case cua && p.req.Truncation != "auto":
		return invalid("truncation", "", "The model '%s' requires 'truncation' to be 'auto'.", p.model)
	case !cua && computers > 0:
		return invalid("tools", "", "Tool 'computer_use_preview' is not supported with %s.", p.model)
	}
	return nil
}

// checkComputerTool checks a computer_use_preview tool.
func checkComputerTool(path string, t tool) *apiError {
	switch {
	case t.DisplayWidth == nil:
		return missing(path + ".display_width")
	case t.DisplayHeight == nil:
		return missing(path + ".display_height")
	case t.Environment == "":
		return missing(path + ".environment")
	case *t.DisplayWidth < 1 || *t.DisplayHeight < 1:
		return invalid(path, "invalid_value", "Invalid '%s': the display's width and height must be positive integers.", path)
	}
	return oneOf(path+".environment", t.Environment, "windows", "mac", "linux", "ubuntu", "browser")
}

func (p *parser) toolChoice(raw map[string]json.RawMessage) *apiError {
	tc := bytes.TrimSpace(raw["tool_choice"])
	p.req.ToolChoice = tc
	if len(tc) == 0 || string(tc) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(tc, &s) == nil {
		return oneOf("tool_choice", s, "none", "auto", "required")
	}
	var o struct{ Type, Name string }
	if _, e := decodeObject("tool_choice", tc, &o); e != nil {
		return e
	}
	for _, t := range p.req.Tools {
		if t.Type == o.Type && (o.Type != "function" || t.Name == o.Name) {
			return nil
		}
	}
	if o.Type == "function" {
		return invalid("tool_choice", "", "Tool choice 'function' with name '%s' not found in 'tools' parameter.", o.Name)
	}
	return invalid("tool_choice", "", "Tool choice '%s' not found in 'tools' parameter.", o.Type)
}

// textFormat is text.format.
type textFormat struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Schema      map[string]any `json:"schema"`
	Strict      *bool          `json:"strict"`
	Description string         `json:"description"`
}

func (p *parser) text(raw map[string]json.RawMessage) *apiError {
	var text map[string]json.RawMessage
	if e := decodeField(raw, "text", &text); e != nil {
		return e
	}
	for _, k := range slices.Sorted(maps.Keys(text)) {
		if k != "format" && k != "verbosity" {
			return unknownParam("text." + k)
		}
	}
	var verbosity string
	if e := decodeField(text, "verbosity", &verbosity); e != nil {
		return e
	}
	if e := optional("text.verbosity", verbosity, "low", "medium", "high"); e != nil {
		return e
	}
	f := &p.req.Format
	f.Type = "text"
	if len(text["format"]) == 0 {
		return nil
	}
	keys, e := decodeObject("text.format", text["format"], f)
	if e != nil {
		return e
	}
	if e := oneOf("text.format.type", f.Type, "text", "json_schema", "json_object"); e != nil {
		return e
	}
	allowed := map[string]map[string]bool{"text": set("type"), "json_object": set("type"),
		"json_schema": set("type", "name", "schema", "strict", "description")}[f.Type]
	for _, k := range keys {
		if !allowed[k] {
			return unknownParam("text.format." + k)
		}
	}
	switch {
	case f.Type == "json_object" && !bytes.Contains(bytes.ToLower(append(slices.Clone(raw["input"]), raw["instructions"]...)), []byte("json")):
		return invalid("text.format", "", "Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'.")
	case f.Type != "json_schema":
		return nil
	case f.Name == "":
		return missing("text.format.name")
	case !namePattern.MatchString(f.Name):
		return invalid("text.format.name", "invalid_value", "Invalid 'text.format.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")
	case f.Schema == nil:
		return missing("text.format.schema")
	}
	if msg := checkSchema(f.Schema, f.Strict != nil && *f.Strict); msg != "" {
		return invalid("text.format.schema", "invalid_json_schema", "Invalid schema for response_format '%s': %s", f.Name, msg)
	}
	return nil
}

// checkSchema says what OpenAI refuses in a tool's or a format's JSON
// schema: the root must be an object; in strict mode every object must
// forbid additional properties and require all of its properties.
func checkSchema(schema map[string]any, strict bool) string {
	if schema == nil {
		return ""
	}
	if t, _ := schema["type"].(string); t != "object" {
		return fmt.Sprintf(`schema must be a JSON Schema of 'type: "object"', got 'type: "%v"'.`, schema["type"])
	}
	if !strict {
		return ""
	}
	return strictSchema(schema, nil)
}

func strictSchema(v any, ctx []string) string {
	s, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	where := "In context=(" + quoteTuple(ctx) + ")"
	props, _ := s["properties"].(map[string]any)
	if s["type"] == "object" || props != nil {
		if s["additionalProperties"] != false {
			return where + ", 'additionalProperties' is required to be supplied and to be false."
		}
		req, _ := s["required"].([]any)
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if !slices.Contains(req, any(k)) {
				return fmt.Sprintf("%s, 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'.", where, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if msg := strictSchema(props[k], append(slices.Clone(ctx), "properties", k)); msg != "" {
				return msg
			}
		}
	}
	if msg := strictSchema(s["items"], append(slices.Clone(ctx), "items")); msg != "" {
		return msg
	}
	for _, key := range []string{"$defs", "definitions"} {
		defs, _ := s[key].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(defs)) {
			if msg := strictSchema(defs[k], append(slices.Clone(ctx), key, k)); msg != "" {
				return msg
			}
		}
	}
	for _, key := range []string{"anyOf", "allOf"} {
		list, _ := s[key].([]any)
		for i, sub := range list {
			if msg := strictSchema(sub, append(slices.Clone(ctx), key, fmt.Sprint(i))); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// quoteTuple writes ctx as Python writes a tuple of strings.
func quoteTuple(ctx []string) string {
	q := make([]string, len(ctx))
	for i, c := range ctx {
		q[i] = "'" + c + "'"
	}
	if len(q) == 1 {
		return q[0] + ","
	}
	return strings.Join(q, ", ")
}

// decodeField decodes raw[name] into dst; absent and null leave dst.
func decodeField(raw map[string]json.RawMessage, name string, dst any) *apiError {
	v, ok := raw[name]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return typeError(name, err)
	}
	return nil
}

// decodeObject decodes the object el into dst and returns its keys, sorted.
func decodeObject(path string, el json.RawMessage, dst any) ([]string, *apiError) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(el, &keys); err != nil || keys == nil {
		return nil, badType(path, "an object", jsonKind(el))
	}
	if err := json.Unmarshal(el, dst); err != nil {
		return nil, typeError(path, err)
	}
	return slices.Sorted(maps.Keys(keys)), nil
}

// typeError words a decoding error as OpenAI's invalid_type.
func typeError(path string, err error) *apiError {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return invalid(path, "invalid_value", "Invalid '%s': %s.", path, err.Error())
	}
	if te.Field != "" {
		path += "." + te.Field
	}
	want := "an object"
	switch te.Type.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "a boolean"
	case reflect.Int, reflect.Int64:
		want = "an integer"
	case reflect.Float64, reflect.Pointer:
		want = "a number"
	case reflect.Slice:
		want = "an array"
	}
	got := te.Value
	switch {
	case strings.HasPrefix(got, "number"):
		got = "a number"
	case got == "bool":
		got = "a boolean"
	case got == "array" || got == "object":
		got = "an " + got
	default:
		got = "a " + got
	}
	return badType(path, want, got)
}

// jsonKind names the JSON kind of v as an error message does.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// reasoningModel reports whether model is a reasoning model, which takes
// no sampling parameters.
func reasoningModel(model string) bool {
	return strings.HasPrefix(model, "gpt-5") || strings.HasPrefix(model, "o1") ||
		strings.HasPrefix(model, "o3") || strings.HasPrefix(model, "o4")
}

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// quoteList writes values as the real API lists supported values.
func quoteList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "'" + v + "'"
	}
	if len(q) > 1 {
		q[len(q)-1] = "and " + q[len(q)-1]
	}
	return strings.Join(q, ", ")
}
