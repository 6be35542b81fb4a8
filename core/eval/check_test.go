package eval

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
)

func pngOf(t testing.TB, w, h int, fill func(x, y int) uint8) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetGray(x, y, color.Gray{Y: fill(x, y)})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHostChecks: each kind of check passes on an equivalent output and
// fails, saying why, on a different or missing one.
func TestHostChecks(t *testing.T) {
	white := pngOf(t, 20, 20, func(x, y int) uint8 { return 255 })
	dot := pngOf(t, 20, 20, func(x, y int) uint8 {
		if x == 3 && y == 3 {
			return 0
		}
		return 255
	})
	black := pngOf(t, 20, 20, func(x, y int) uint8 { return 0 })
	dir := writeSuite(t, map[string]string{
		"want.txt": "a\nb\n", "want.json": `{"a": 1, "b": [true, "x"]}`, "want.csv": "name,n\nx,1\ny,2\n", "want.png": white,
	})
	cases := []struct {
		name   string
		check  Check
		output string
		pass   bool
		detail string
	}{
		{"file same", Check{Type: "file", Expected: "want.txt"}, "a\nb\n", true, ""},
		{"file differs", Check{Type: "file", Expected: "want.txt"}, "a\nb", false, "differs from want.txt"},
		{"json reordered, 1.0", Check{Type: "json", Expected: "want.json"}, `{"b": [true, "x"], "a": 1.0}`, true, ""},
		{"json differs", Check{Type: "json", Expected: "want.json"}, `{"a": 2, "b": [true, "x"]}`, false, "differs"},
		{"json value", Check{Type: "json", Value: []byte(`[1, 2]`)}, "[1,2]\n", true, ""},
		{"json garbage", Check{Type: "json", Value: []byte(`[1]`)}, "[1] [2]", false, "more than one JSON value"},
		{"csv spaces and CRLF", Check{Type: "csv", Expected: "want.csv"}, "name, n\r\nx ,1\r\ny,2\r\n", true, ""},
		{"csv order", Check{Type: "csv", Expected: "want.csv"}, "name,n\ny,2\nx,1\n", false, "row 2"},
		{"csv any order", Check{Type: "csv", Expected: "want.csv", IgnoreOrder: true}, "name,n\ny,2\nx,1\n", true, ""},
		{"csv header kept first", Check{Type: "csv", Expected: "want.csv", IgnoreOrder: true}, "x,1\nname,n\ny,2\n", false, "row 1"},
		{"csv rows", Check{Type: "csv", Expected: "want.csv"}, "name,n\n", false, "1 rows, want 3"},
		{"regex", Check{Type: "regex", Pattern: `^\s*42\s*$`}, " 42\n", true, ""},
		{"regex no", Check{Type: "regex", Pattern: `^\s*42\s*$`}, "420", false, "does not match"},
		{"image close", Check{Type: "image", Expected: "want.png", Threshold: 0.99}, dot, true, ""},
		{"image far", Check{Type: "image", Expected: "want.png", Threshold: 0.5}, black, false, "0.000 similar"},
		{"image not", Check{Type: "image", Expected: "want.png", Threshold: 0.5}, "GIF89a", false, "not an image"},
	}
	for _, c := range cases {
		c.check.Output = "out"
		v := HostCheck(dir, c.check, func(name string) ([]byte, error) {
			if name != "out" {
				t.Fatalf("asked for %s", name)
			}
			return []byte(c.output), nil
		})
		if v.Passed != c.pass || !strings.Contains(v.Detail, c.detail) || v.Crashed {
			t.Errorf("%s: %+v; want passed %v with %q", c.name, v, c.pass, c.detail)
		}
	}
	v := HostCheck(dir, Check{Type: "regex", Output: "out", Pattern: "x"}, func(string) ([]byte, error) { return nil, errors.New("not in the task's outputs") })
	if v.Passed || v.Detail != "output out: not in the task's outputs" {
		t.Errorf("missing output: %+v", v)
	}
}

// TestCommandVerdict: exit 0 passes, 1 to 125 fails, a signal, a timeout
// or a check that did not run is a crashed checker.
func TestCommandVerdict(t *testing.T) {
	cases := []struct {
		res         wire.CheckResult
		pass, crash bool
		detail      string
	}{
		{wire.CheckResult{ExitCode: 0}, true, false, ""},
		{wire.CheckResult{ExitCode: 1, Stdout: "checking\nwrong count: 2\n"}, false, false, "exited 1: wrong count: 2"},
		{wire.CheckResult{ExitCode: 139}, false, true, "crashed (exit 139)"},
		{wire.CheckResult{ExitCode: -1, TimedOut: true}, false, true, "timed out"},
		{wire.CheckResult{ExitCode: -1, Error: "guest gone"}, false, true, "did not run: guest gone"},
		{wire.CheckResult{ExitCode: 2, Stderr: "bad\x1b]0;pwned\x07\n"}, false, false, `exited 2: bad\x1b]0;pwned\x07`},
	}
	for _, c := range cases {
		v := CommandVerdict(c.res)
		if v.Passed != c.pass || v.Crashed != c.crash || !strings.Contains(v.Detail, c.detail) {
			t.Errorf("%+v: %+v", c.res, v)
		}
	}
}

// FuzzHostCheck: whatever a guest leaves as an output (a PNG header
// that claims 2^31 pixels among the seeds), no check panics or reports a
// crashed checker: a bad output is a plain failure.
func FuzzHostCheck(f *testing.F) {
	dir := writeSuite(f, map[string]string{"want.json": `{"a": [1, 2]}`, "want.csv": "a,b\n1,2\n", "want.png": pngOf(f, 4, 4, func(x, y int) uint8 { return 9 })})
	checks := []Check{
		{Type: "json", Output: "o", Expected: "want.json"},
		{Type: "csv", Output: "o", Expected: "want.csv", IgnoreOrder: true},
		{Type: "regex", Output: "o", Pattern: `^a+$`},
		{Type: "image", Output: "o", Expected: "want.png", Threshold: 0.9},
	}
	f.Add([]byte(`{"a": [1.0, 2]}`))
	f.Add([]byte("a,b\n1,2\n"))
	f.Add([]byte(pngOf(f, 4, 4, func(x, y int) uint8 { return 9 })))
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x7f\xff\xff\xff\x7f\xff\xff\xff\x08\x02\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		for _, c := range checks {
			v := HostCheck(dir, c, func(string) ([]byte, error) { return out, nil })
			if v.Crashed {
				t.Fatalf("%s crashed on %q: %s", c.Type, out, v.Detail)
			}
		}
	})
}
