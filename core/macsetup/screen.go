package macsetup

import (
	"context"
	"image"
	"image/color"
	"strings"
	"unicode"
)

// Text is a line of text a Reader found on the screen, and where it is
// (pixels of the frame).
type Text struct {
	String string
	Box    image.Rectangle
}

// Reader reads the text on a screen. On a Mac it is Apple's Vision text
// recognition (VisionReader); tests read synthetic frames themselves.
type Reader interface {
	Read(ctx context.Context, img image.Image) ([]Text, error)
}

// normalize makes text comparable: lower case, typographic quotes and
// dashes as plain ones, runs of spaces as one.
func normalize(s string) string {
	s = strings.NewReplacer("’", "'", "‘", "'", "“", `"`, "”", `"`, "–", "-", "—", "-", "…", "...").Replace(s)
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), unicode.IsSpace), " ")
}

// find returns the first line that contains phrase (compared
// normalized), or, for a phrase a screen breaks over lines, the first of
// the lines that together contain it.
func find(texts []Text, phrase string) (Text, bool) {
	want := normalize(phrase)
	if want == "" {
		return Text{}, false
	}
	for _, t := range texts {
		if strings.Contains(normalize(t.String), want) {
			return t, true
		}
	}
	for i := range texts {
		joined := normalize(texts[i].String)
		for j := i + 1; j < len(texts) && j < i+3; j++ {
			joined += " " + normalize(texts[j].String)
			if strings.Contains(joined, want) {
				return texts[i], true
			}
		}
	}
	return Text{}, false
}

// anyOf says which of phrases (if any) the screen shows.
func anyOf(texts []Text, phrases []string) (string, bool) {
	for _, p := range phrases {
		if _, ok := find(texts, p); ok {
			return p, true
		}
	}
	return "", false
}

// thumbSide is the size of a screen's fingerprint: a grey thumbnail
// fine enough to see a screen change (a new title, a moved sheet) and
// coarse enough to ignore a blinking caret.
const thumbW, thumbH = 48, 30

// fingerprint is a screen's grey thumbnail (the mean of each cell).
func fingerprint(img image.Image) []uint8 {
	b := img.Bounds()
	out := make([]uint8, thumbW*thumbH)
	if b.Empty() {
		return out
	}
	for ty := range thumbH {
		for tx := range thumbW {
			x0, x1 := b.Min.X+tx*b.Dx()/thumbW, b.Min.X+(tx+1)*b.Dx()/thumbW
			y0, y1 := b.Min.Y+ty*b.Dy()/thumbH, b.Min.Y+(ty+1)*b.Dy()/thumbH
			var sum, n uint64
			// Every second pixel of every second row: enough for a mean.
			for y := y0; y < max(y1, y0+1); y += 2 {
				for x := x0; x < max(x1, x0+1); x += 2 {
					sum += uint64(grey(img.At(x, y)))
					n++
				}
			}
			out[ty*thumbW+tx] = uint8(sum / max(n, 1))
		}
	}
	return out
}

func grey(c color.Color) uint8 {
	r, g, b, _ := c.RGBA()
	return uint8((299*r + 587*g + 114*b) / 1000 >> 8)
}

// sameScreen says whether two fingerprints show the same screen: no cell
// changed by more than a few levels.
func sameScreen(a, b []uint8) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d > 6 || d < -6 {
			return false
		}
	}
	return true
}

// blank says whether a screen shows nothing at all: every cell of its
// fingerprint has the same grey, give or take two levels (the black of a
// booting VM, the empty white before Setup Assistant draws). A word
// anywhere on the screen makes a cell differ.
func blank(fp []uint8) bool {
	if len(fp) == 0 {
		return true
	}
	lo, hi := fp[0], fp[0]
	for _, v := range fp {
		lo, hi = min(lo, v), max(hi, v)
	}
	return hi-lo <= 4
}
