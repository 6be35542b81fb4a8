package eval

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // image checks read GIF, JPEG and PNG
	_ "image/jpeg"
	_ "image/png"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Outputs gives a check the bytes of a task's output (its path in the
// outbox); a missing output is an error that says so.
type Outputs func(name string) ([]byte, error)

// Verdict is how one check ended.
type Verdict struct {
	Type   string `json:"type"`
	Passed bool   `json:"passed"`
	// Detail says why it failed, in words.
	Detail string `json:"detail,omitempty"`
	// Crashed says the checker itself could not judge (a check command
	// killed by a signal, timed out or not run; an unreadable output is a
	// plain failure).
	Crashed bool `json:"crashed,omitempty"`
}

// HostCheck runs a host-side check against a task's outputs; dir is the
// suite's folder (for Expected).
func HostCheck(dir string, c Check, out Outputs) Verdict {
	v := Verdict{Type: c.Type}
	got, err := out(c.Output)
	if err != nil {
		v.Detail = fmt.Sprintf("output %s: %s", c.Output, err)
		return v
	}
	if len(got) > maxFile {
		v.Detail = fmt.Sprintf("output %s is over %d bytes", c.Output, maxFile)
		return v
	}
	var want []byte
	if c.Expected != "" {
		if want, err = readSuiteFile(dir, c.Expected); err != nil {
			v.Detail, v.Crashed = err.Error(), true
			return v
		}
	}
	switch c.Type {
	case "file":
		v.Passed = bytes.Equal(got, want)
		if !v.Passed {
			v.Detail = fmt.Sprintf("output %s (%d bytes) differs from %s (%d bytes)", c.Output, len(got), c.Expected, len(want))
		}
	case "json":
		if want == nil {
			want = c.Value
		}
		v.Passed, v.Detail = jsonEqual(got, want)
	case "csv":
		v.Passed, v.Detail = csvEqual(got, want, c.IgnoreOrder)
	case "regex":
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			v.Detail, v.Crashed = err.Error(), true
			return v
		}
		v.Passed = re.Match(got)
		if !v.Passed {
			v.Detail = fmt.Sprintf("output %s does not match %s", c.Output, c.Pattern)
		}
	case "image":
		sim, err := imageSimilarity(got, want)
		if err != nil {
			v.Detail = fmt.Sprintf("output %s: %s", c.Output, err)
			return v
		}
		v.Passed = sim >= c.Threshold
		if !v.Passed {
			v.Detail = fmt.Sprintf("output %s is %.3f similar to %s, under %.3f", c.Output, sim, c.Expected, c.Threshold)
		}
	default:
		v.Detail, v.Crashed = "not a host check: "+c.Type, true
	}
	return v
}

// jsonEqual compares two JSON documents as values (numbers as numbers:
// 1 and 1.0 are equal; key order does not matter).
func jsonEqual(got, want []byte) (bool, string) {
	var g, w any
	if err := strictJSON(got, &g); err != nil {
		return false, "output is not JSON: " + err.Error()
	}
	if err := strictJSON(want, &w); err != nil {
		return false, "expected value is not JSON: " + err.Error()
	}
	if reflect.DeepEqual(g, w) {
		return true, ""
	}
	return false, "output JSON differs from the expected value"
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	*v.(*any) = normalize(*v.(*any))
	return nil
}

// normalize turns json.Numbers into float64 so that 1 and 1.0 compare
// equal, recursively.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k])
		}
	}
	return v
}

// csvEqual compares two CSV files row by row, cells trimmed, a final
// newline or \r\n line ends ignored; ignoreOrder compares the rows after
// the header as a multiset.
func csvEqual(got, want []byte, ignoreOrder bool) (bool, string) {
	g, err := readCSV(got)
	if err != nil {
		return false, "output is not CSV: " + err.Error()
	}
	w, err := readCSV(want)
	if err != nil {
		return false, "expected file is not CSV: " + err.Error()
	}
	if len(g) != len(w) {
		return false, fmt.Sprintf("output has %d rows, want %d", len(g), len(w))
	}
	if ignoreOrder && len(g) > 1 {
		g, w = sortRows(g), sortRows(w)
	}
	for i := range w {
		if !slices.Equal(g[i], w[i]) {
			return false, fmt.Sprintf("row %d is %q, want %q", i+1, strings.Join(g[i], ","), strings.Join(w[i], ","))
		}
	}
	return true, ""
}

func readCSV(b []byte) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		for i := range row {
			row[i] = strings.TrimSpace(row[i])
		}
	}
	return rows, nil
}

// sortRows keeps the header first and sorts the rest.
func sortRows(rows [][]string) [][]string {
	body := slices.Clone(rows[1:])
	slices.SortFunc(body, func(a, b []string) int { return slices.Compare(a, b) })
	return append([][]string{rows[0]}, body...)
}

// imageSimilarity is 1 minus the mean absolute difference of the two
// images' grey levels (0..1), for images of the same size.
func imageSimilarity(got, want []byte) (float64, error) {
	a, err := decodeImage(got)
	if err != nil {
		return 0, err
	}
	b, err := decodeImage(want)
	if err != nil {
		return 0, fmt.Errorf("expected image: %w", err)
	}
	if a.Bounds().Size() != b.Bounds().Size() {
		return 0, fmt.Errorf("is %v, want %v", a.Bounds().Size(), b.Bounds().Size())
	}
	ab, bb := a.Bounds(), b.Bounds()
	var diff float64
	n := float64(ab.Dx() * ab.Dy())
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			diff += abs(grey(a, ab.Min.X+x, ab.Min.Y+y) - grey(b, bb.Min.X+x, bb.Min.Y+y))
		}
	}
	if n == 0 {
		return 1, nil
	}
	return 1 - diff/n, nil
}

// maxPixels bounds an image a check decodes.
const maxPixels = 40_000_000

func decodeImage(b []byte) (image.Image, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("not an image: %w", err)
	}
	if cfg.Width*cfg.Height > maxPixels {
		return nil, fmt.Errorf("image of %dx%d is over %d pixels", cfg.Width, cfg.Height, maxPixels)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("not an image: %w", err)
	}
	return img, nil
}

func grey(img image.Image, x, y int) float64 {
	r, g, b, _ := img.At(x, y).RGBA()
	return (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(b)) / 65535
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
