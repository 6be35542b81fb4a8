package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRedactKeepsSecretsOut: whatever a guest answers, once a secret was
// typed, the redacted answer does not hold it: not raw, and, for a JSON
// answer, in none of its decoded strings (however the guest escaped it).
func FuzzRedactKeepsSecretsOut(f *testing.F) {
	const secret = `p&ss"w<rd>é`
	for _, seed := range []string{
		`{"stdout":"p\u0026ss\"w\u003crd\u003e\u00e9\n"}`,
		`["x", {"p&ss\"w<rd>é": 1}]`,
		`plain p&ss"w<rd>é text`,
		`"p&ss\u0022w<rd>\u00e9"`,
		`{"a":[[[["p&ss\"w<rd>é"]]]]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		var d redactor
		d.add(secret, "site password")
		out := d.redact(answer)
		if strings.Contains(out, secret) {
			t.Fatalf("redact(%q) = %q holds the secret", answer, out)
		}
		var v any
		if json.Unmarshal([]byte(out), &v) == nil {
			var walk func(any)
			walk = func(v any) {
				switch x := v.(type) {
				case string:
					if strings.Contains(x, secret) {
						t.Fatalf("redact(%q) decodes to %q", answer, x)
					}
				case []any:
					for _, e := range x {
						walk(e)
					}
				case map[string]any:
					for k, e := range x {
						walk(k)
						walk(e)
					}
				}
			}
			walk(v)
		}
	})
}
