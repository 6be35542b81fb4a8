package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// argSchemas holds, per tool, the resolved JSON schema of its arguments,
// closed to other fields: a model's tool call is checked like user input,
// with github.com/google/jsonschema-go (the schema package of the official
// MCP Go SDK), so that a wrong type, a missing argument, a value outside an
// enum or a made-up field is refused naming the argument instead of being
// dropped or guessed.
var argSchemas = func() map[string]*jsonschema.Resolved {
	out := make(map[string]*jsonschema.Resolved, len(toolSpecs)+len(elementSpecs))
	for _, s := range append(slices.Clone(toolSpecs), elementSpecs...) {
		var sch jsonschema.Schema
		if err := json.Unmarshal([]byte(s.params), &sch); err != nil {
			panic(fmt.Sprintf("tool %s: schema: %v", s.name, err))
		}
		sch.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
		r, err := sch.Resolve(nil)
		if err != nil {
			panic(fmt.Sprintf("tool %s: schema: %v", s.name, err))
		}
		out[s.name] = r
	}
	return out
}()

var propertyPath = regexp.MustCompile(`validating /properties/([^:/]+)(/items)?: `)

// checkArgs validates a tool call's arguments against its schema.
func checkArgs(tool string, args map[string]any) error {
	r, ok := argSchemas[tool]
	if !ok {
		return nil
	}
	err := r.Validate(args)
	if err == nil {
		return nil
	}
	// "validating root: validating /properties/x: type: ..." reads, for
	// the model, "argument x: type: ...".
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	if m := propertyPath.FindStringSubmatch(msg); m != nil {
		msg = "argument " + m[1] + ": " + propertyPath.ReplaceAllString(msg, "")
	}
	return fmt.Errorf("%s: %s", tool, truncate(msg, 300))
}
