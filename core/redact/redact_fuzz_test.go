package redact

import (
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/redact/redacttest"
)

// FuzzRedactKeepsSecretsOut: whatever a guest answers, once a secret is
// known, the redacted answer does not hold it: not raw, and, for a JSON
// answer, in none of its decoded strings (however the guest escaped it);
// and the secret in each of the spellings the package promises, put
// between whatever the guest wrote before and after, is gone too.
func FuzzRedactKeepsSecretsOut(f *testing.F) {
	const secret = `p&ss"w<rd>é-42`
	for _, seed := range [][2]string{
		{`{"stdout":"`, `\n"}`},
		{`["x", {"`, `": 1}]`},
		{"plain ", " text"},
		{"abc", "="},
		{"%4", "\\x"},
		{"0x", "ff"},
		{"[secret: site password]", "&#"},
	} {
		f.Add(seed[0], seed[1])
	}
	spellings := redacttest.Spellings(secret)
	f.Fuzz(func(t *testing.T, before, after string) {
		var d Redactor
		d.Add(secret, "site password")
		for _, answer := range []string{before + after, before + secret + after} {
			out := d.Redact(answer)
			if strings.Contains(out, secret) {
				t.Fatalf("Redact(%q) = %q holds the secret", answer, out)
			}
			for _, text := range redacttest.DecodedTexts(out) {
				if strings.Contains(text, secret) {
					t.Fatalf("Redact(%q) = %q decodes to the secret", answer, out)
				}
			}
		}
		for name, form := range spellings {
			form = strings.TrimSpace(form)
			if out := d.Redact(before + form + after); strings.Contains(out, form) {
				t.Fatalf("%s: Redact(%q) = %q", name, before+form+after, out)
			}
		}
	})
}
