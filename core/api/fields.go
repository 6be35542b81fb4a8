package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// checkFields compares the top-level fields of a JSON object with the
// fields of the struct type t (or *t) decodes into. A field t has under
// another case was decoded (encoding/json matches names case-insensitively)
// and is fine. A field t does not have is ignored and returned, unless it
// is one or two edits from a field t has: then it is most likely a typo
// whose value would be silently lost, and that is a 400 naming the field
// meant.
func checkFields(body []byte, t reflect.Type) ([]string, error) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return nil, nil // not an object: the decoder said what was wrong
	}
	known := jsonFieldNames(t)
	if known == nil {
		return nil, nil
	}
	var ignored []string
	for k := range raw {
		if slices.ContainsFunc(known, func(n string) bool { return strings.EqualFold(n, k) }) {
			continue
		}
		if near := nearest(k, known); near != "" {
			return nil, errdefs.Invalidf("unknown field %q: did you mean %q?", k, near)
		}
		ignored = append(ignored, k)
	}
	slices.Sort(ignored)
	return ignored, nil
}

var fieldNames sync.Map // reflect.Type -> []string

// jsonFieldNames lists the JSON names of a struct type's fields, those of
// embedded structs included; nil for a type that is not a struct.
func jsonFieldNames(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	if v, ok := fieldNames.Load(t); ok {
		return v.([]string)
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case f.Anonymous && tag == "":
			names = append(names, jsonFieldNames(f.Type)...)
		case !f.IsExported():
		case tag != "":
			names = append(names, tag)
		default:
			names = append(names, f.Name)
		}
	}
	fieldNames.Store(t, names)
	return names
}

// nearest returns the name in known within two edits of k (one for short
// names), or "".
func nearest(k string, known []string) string {
	limit := 2
	if len(k) <= 5 {
		limit = 1
	}
	for _, n := range known {
		if d := len(k) - len(n); d > limit || -d > limit {
			continue // and a long key costs nothing
		}
		if editDistance(strings.ToLower(k), strings.ToLower(n)) <= limit {
			return n
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
