package mcpserve

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
)

// bound narrows one input of a tool's schema.
type bound func(*jsonschema.Schema)

// schema is the input schema of T (its fields, the required ones those
// without omitempty, no others) narrowed by bounds. The SDK checks every
// call against it before the tool runs. It panics on a mistake of this
// package (an input T lacks), as mcp.AddTool does.
func schema[T any](bounds ...bound) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserve: schema of %T: %v", *new(T), err))
	}
	for _, b := range bounds {
		b(s)
	}
	return s
}

// prop is the schema of input name.
func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties[name]
	if !ok {
		panic(fmt.Sprintf("mcpserve: no input %q", name))
	}
	return p
}

// str bounds a string's length (in characters).
func str(name string, minLen, maxLen int) bound {
	return func(s *jsonschema.Schema) {
		p := prop(s, name)
		if minLen > 0 {
			p.MinLength = &minLen
		}
		p.MaxLength = &maxLen
	}
}

// integer bounds a whole number to [lo, hi] and gives its default (0:
// none, the zero value).
func integer(name string, lo, hi, def int) bound {
	return func(s *jsonschema.Schema) {
		p := prop(s, name)
		l, h := float64(lo), float64(hi)
		p.Minimum, p.Maximum = &l, &h
		if def != 0 {
			p.Default = json.RawMessage(strconv.Itoa(def))
		}
	}
}

// oneOf says a string is one of values.
func oneOf(name string, values ...any) bound {
	return func(s *jsonschema.Schema) { prop(s, name).Enum = values }
}

// pattern says a string matches re (whole).
func pattern(name, re string) bound {
	return func(s *jsonschema.Schema) { prop(s, name).Pattern = re }
}

// taskID says a string is a task's id.
func taskID(name string) bound { return pattern(name, taskIDPattern) }

// list bounds an array of strings: at most maxItems, each at most maxLen
// characters (0: any) and one of values (none: any).
func list(name string, maxItems, maxLen int, values ...any) bound {
	return func(s *jsonschema.Schema) {
		p := prop(s, name)
		p.MaxItems = &maxItems
		if p.Items == nil {
			panic(fmt.Sprintf("mcpserve: input %q is not a list", name))
		}
		if maxLen > 0 {
			p.Items.MaxLength = &maxLen
		}
		if len(values) > 0 {
			p.Items.Enum = values
		}
	}
}
