package redact

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/redact/redacttest"
)

const (
	testSecret = `Tr0ub4dor&3-correct-horse`
	testLabel  = "[secret: intranet password]"
)

func testRedactor() *Redactor {
	var d Redactor
	d.Add(testSecret, "intranet password")
	return &d
}

// TestRedactCatchesEverySpelling: the secret in each spelling, inside
// ordinary text, is replaced by its label, and no trace of that spelling
// is left.
func TestRedactCatchesEverySpelling(t *testing.T) {
	d := testRedactor()
	for name, form := range redacttest.Spellings(testSecret) {
		for _, around := range []string{"%s", "the answer: %s (done)", "{\"stdout\":%q}", "key=%s&next=1"} {
			in := fmt.Sprintf(around, form)
			out := d.Redact(in)
			if !strings.Contains(out, testLabel) {
				t.Errorf("%s in %q: not redacted: %q", name, around, out)
				continue
			}
			if strings.Contains(out, strings.TrimSpace(form)) {
				t.Errorf("%s in %q: left in %q", name, around, out)
			}
		}
	}
}

// TestRedactReplacesTheSpellingOnly: a listing of the spellings, one a
// line after its name, comes out as the names each with the label: the
// label takes the spelling and none of the words around it.
func TestRedactReplacesTheSpellingOnly(t *testing.T) {
	for _, secret := range []string{testSecret, `<hunter2&"correct"horse>!`} {
		var d Redactor
		d.Add(secret, "intranet password")
		spellings := redacttest.Spellings(secret)
		names := slices.Sorted(maps.Keys(spellings))
		var in, want strings.Builder
		for _, name := range names {
			fmt.Fprintf(&in, "%s: %s\n", name, strings.TrimRight(spellings[name], "\n"))
			fmt.Fprintf(&want, "%s: %s\n", name, testLabel)
		}
		if got := d.Redact(in.String()); got != want.String() {
			t.Errorf("%s: got:\n%s\nwant:\n%s", secret, got, want.String())
		}
	}
}

// TestRedactLeavesOrdinaryText: text without the secret passes unchanged,
// base64, hex and parts of the secret included.
func TestRedactLeavesOrdinaryText(t *testing.T) {
	d := testRedactor()
	for _, s := range []string{
		"hello world, nothing to see",
		"deadbeef cafe 0123456789 0x41 %41 &amp;",
		base64.StdEncoding.EncodeToString([]byte("an ordinary sentence, encoded")),
		"Tr0ub4dor and correct-horse, apart",
		`{"stdout":"ok\n","exitCode":0}`,
		redacttest.Wrap(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("nothing secret here ", 20))), 76),
	} {
		if out := d.Redact(s); out != s {
			t.Errorf("Redact(%q) = %q", s, out)
		}
	}
}

// TestRedactIsIdempotent: a redacted text redacted again is the same,
// even when the credential's name holds its password.
func TestRedactIsIdempotent(t *testing.T) {
	var d Redactor
	d.Add("password123", "password123 password")
	d.Add(testSecret, "intranet password")
	for _, s := range []string{"log: password123 then " + testSecret, base64.StdEncoding.EncodeToString([]byte("password123"))} {
		once := d.Redact(s)
		if twice := d.Redact(once); twice != once || strings.Contains(once, testSecret) {
			t.Errorf("Redact(%q) = %q, then %q", s, once, twice)
		}
	}
}

// TestRedactKeepsJSONValid: a JSON answer stays JSON, its strings
// redacted however the guest escaped them.
func TestRedactKeepsJSONValid(t *testing.T) {
	d := testRedactor()
	in := `{"stdout":"Tr0ub4dor\u00263-correct-horse\n","files":["` + base64.StdEncoding.EncodeToString([]byte(testSecret)) + `"]}`
	out := d.Redact(in)
	var v struct {
		Stdout string
		Files  []string
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%q is not JSON: %v", out, err)
	}
	if v.Stdout != testLabel+"\n" || len(v.Files) != 1 || v.Files[0] != testLabel {
		t.Errorf("decoded %+v", v)
	}
}

// TestShortSecretsAndNone: a redactor without secrets changes nothing; a
// secret too short is not added.
func TestShortSecretsAndNone(t *testing.T) {
	var d Redactor
	if out := d.Redact("anything " + testSecret); out != "anything "+testSecret {
		t.Errorf("without secrets: %q", out)
	}
	d.Add("abc", "short")
	if out := d.Redact("abc abc"); out != "abc abc" {
		t.Errorf("a short secret: %q", out)
	}
	d.Add("a1b2", "four")
	if out := d.Redact("x a1b2 y"); out != "x [secret: four] y" {
		t.Errorf("a four-character secret: %q", out)
	}
}

// TestHoldKeepsAPartialSecretBack: text shown as it streams in is cut
// where nothing that follows can complete a secret in what is shown.
func TestHoldKeepsAPartialSecretBack(t *testing.T) {
	d := testRedactor()
	b64 := base64.StdEncoding.EncodeToString([]byte(testSecret))
	for _, full := range []string{
		"output line\n" + testSecret + "\nmore\n",
		"output line\n" + strings.Join(strings.Split(testSecret, ""), " ") + "\n",
		"output line\n" + redacttest.Wrap(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 200)+testSecret)), 76),
		"output line\n" + b64 + "\n",
		"output line\n" + redacttest.Spellings(testSecret)["hex with colons"] + "\n",
		"output line\n" + url.QueryEscape(testSecret) + "\n",
	} {
		for split := 1; split < len(full); split++ {
			shown, held := "", full[:split]
			cut := d.Hold(held)
			shown += d.Redact(held[:cut])
			shown += d.Redact(held[cut:] + full[split:])
			if strings.Contains(shown, testSecret) || strings.Contains(shown, b64[4:20]) || !strings.Contains(shown, testLabel) {
				t.Fatalf("split at %d of %q: shown %q", split, full, shown)
			}
		}
	}
	var none Redactor
	if none.Hold("abc") != 3 {
		t.Error("without secrets, everything is shown")
	}
	if cut := d.Hold("a long line of ordinary output.\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"); cut == 0 {
		t.Error("ordinary output is held back whole")
	}
}

// TestRedactTakesLinearTime: large and hostile inputs (long runs, nested
// encodings, escapes everywhere) are redacted in time proportional to
// their size.
func TestRedactTakesLinearTime(t *testing.T) {
	d := testRedactor()
	d.Add("another-secret-42", "other")
	random := make([]byte, 256<<10)
	rand.Read(random)
	nested := strings.Repeat("QUFB", 4000)
	for range 3 {
		nested = base64.StdEncoding.EncodeToString([]byte(nested))
	}
	for name, in := range map[string]string{
		"wrapped base64": redacttest.Wrap(base64.StdEncoding.EncodeToString(random), 76),
		"one letter":     strings.Repeat("a", 256<<10),
		"hex":            strings.Repeat("de ad be ef ", 25000),
		"escapes":        strings.Repeat(`%41\x41&#65;\u0041`, 15000),
		"nested":         nested,
	} {
		small, large := in[:len(in)/8], in
		t0 := time.Now()
		d.Redact(small)
		t1 := time.Now()
		d.Redact(large)
		t2 := time.Now()
		// Eight times the input may take eight times as long; allow for
		// noise, not for a square.
		t.Logf("%s: %d bytes in %v, %d in %v", name, len(small), t1.Sub(t0), len(large), t2.Sub(t1))
		if per, whole := t1.Sub(t0), t2.Sub(t1); whole > 30*per+200*time.Millisecond {
			t.Errorf("%s: %d bytes took %v, %d bytes %v", name, len(small), per, len(large), whole)
		}
	}
}

// TestNestedPastTheBudgetIsRedacted: encodings nested to exhaust the work
// budget are redacted, not let through unchecked.
func TestNestedPastTheBudgetIsRedacted(t *testing.T) {
	sc := newScanner(testRedactor().known(), 10)
	sc.budget = 10
	b64 := base64.StdEncoding.EncodeToString([]byte("nothing secret, but long enough"))
	if out := sc.redact(b64); out != uncheckedLabel {
		t.Errorf("past the budget: %q", out)
	}
}
