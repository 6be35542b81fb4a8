package claudetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strings"
)

// fields is a JSON object of the request being checked, at path (the
// dotted location the API's error messages use: messages.1.content.0).
// The body is decoded once (numbers as json.Number); the checks walk the
// tree.
type fields struct {
	m    map[string]any
	path string
}

// decode reads a request body into a tree.
func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, invalid("There was an issue with the request body: it is not valid JSON (%s)", err.Error())
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, invalid("There was an issue with the request body: it is not valid JSON (data after the top-level value)")
	}
	return v, nil
}

// object reads v as an object whose keys are among allowed; a key in
// unmodelled is a real field this fake does not simulate.
func object(v any, path string, allowed, unmodelled []string) (*fields, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalid("%s: Input should be a valid dictionary", orBody(path))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case slices.Contains(allowed, k):
		case slices.Contains(unmodelled, k):
			return nil, notModelled(join(path, k))
		default:
			return nil, invalid("%s: Extra inputs are not permitted", join(path, k))
		}
	}
	return &fields{m: m, path: path}, nil
}

// typeOf is the "type" of an object, "" if it has none.
func typeOf(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["type"].(string)
	return s
}

// notModelled refuses a documented field or value this fake does not
// simulate, so that no test passes on a behaviour nobody checked.
func notModelled(what string) *apiError {
	return invalid("%s: claudetest does not model this part of the Messages API; teach it (tests/llmtest/claudetest) before a test relies on it", what)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orBody(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// has reports whether key is present and not null.
func (f *fields) has(key string) bool { return f.m[key] != nil }

func (f *fields) at(key string) string { return join(f.path, key) }

func (f *fields) required(key string) error {
	if !f.has(key) {
		return invalid("%s: Field required", f.at(key))
	}
	return nil
}

func (f *fields) str(key string, required bool) (string, error) {
	if !f.has(key) {
		if required {
			return "", f.required(key)
		}
		return "", nil
	}
	s, ok := f.m[key].(string)
	if !ok {
		return "", invalid("%s: Input should be a valid string", f.at(key))
	}
	return s, nil
}

// oneOf reads a string that must be one of values.
func (f *fields) oneOf(key string, required bool, values ...string) (string, error) {
	s, err := f.str(key, required)
	if err != nil || !f.has(key) {
		return s, err
	}
	if !slices.Contains(values, s) {
		quoted := make([]string, len(values))
		for i, v := range values {
			quoted[i] = "'" + v + "'"
		}
		list := strings.Join(quoted, ", ")
		if n := len(quoted); n > 1 {
			list = strings.Join(quoted[:n-1], ", ") + " or " + quoted[n-1]
		}
		return "", invalid("%s: Input should be %s", f.at(key), list)
	}
	return s, nil
}

func (f *fields) number(key string) (float64, bool, error) {
	if !f.has(key) {
		return 0, false, nil
	}
	n, ok := f.m[key].(json.Number)
	x, err := n.Float64()
	if !ok || err != nil {
		return 0, false, invalid("%s: Input should be a valid number", f.at(key))
	}
	return x, true, nil
}

func (f *fields) integer(key string, required bool) (int, bool, error) {
	if !f.has(key) {
		if required {
			return 0, false, f.required(key)
		}
		return 0, false, nil
	}
	n, ok := f.m[key].(json.Number)
	x, err := n.Float64()
	if !ok || err != nil || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return 0, false, invalid("%s: Input should be a valid integer", f.at(key))
	}
	return int(x), true, nil
}

func (f *fields) boolean(key string) (bool, error) {
	if !f.has(key) {
		return false, nil
	}
	b, ok := f.m[key].(bool)
	if !ok {
		return false, invalid("%s: Input should be a valid boolean", f.at(key))
	}
	return b, nil
}

// list reads an array.
func (f *fields) list(key string, required bool) ([]any, error) {
	if !f.has(key) {
		if required {
			return nil, f.required(key)
		}
		return nil, nil
	}
	l, ok := f.m[key].([]any)
	if !ok {
		return nil, invalid("%s: Input should be a valid list", f.at(key))
	}
	return l, nil
}

// isString reports whether key holds a string.
func (f *fields) isString(key string) bool {
	_, ok := f.m[key].(string)
	return ok
}

// canonical is v encoded with sorted keys, without the object's keys drop
// (nor the cache_control of a tool_result's blocks), long strings (image
// data) replaced by their hash: what identifies a block in the prompt
// cache, cheap to build for a screenshot.
func canonical(v any, drop ...string) []byte {
	if m, ok := v.(map[string]any); ok {
		c := make(map[string]any, len(m))
		for k, x := range m {
			if !slices.Contains(drop, k) {
				c[k] = x
			}
		}
		if blocks, ok := c["content"].([]any); ok {
			stripped := make([]any, len(blocks))
			for i, b := range blocks {
				stripped[i] = b
				if bm, ok := b.(map[string]any); ok {
					stripped[i] = without(bm, "cache_control")
				}
			}
			c["content"] = stripped
		}
		v = c
	}
	b, _ := json.Marshal(shrink(v))
	return b
}

func without(m map[string]any, key string) map[string]any {
	c := make(map[string]any, len(m))
	for k, x := range m {
		if k != key {
			c[k] = x
		}
	}
	return c
}

// shrink replaces the long strings of v by their hashes.
func shrink(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > 1024 {
			sum := sha256.Sum256([]byte(x))
			return "sha256:" + hex.EncodeToString(sum[:])
		}
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = shrink(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = shrink(e)
		}
		return c
	}
	return v
}

// tokens estimates the tokens of n bytes of text.
func tokens(n int) int { return (n + 3) / 4 }
