package macsetup

import (
	"context"
	"image"
	"image/color"
	"image/draw"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Synthetic screens for the tests: lines of text drawn black on white in
// the 7x13 bitmap font, and a reader that reads them back by matching
// the font's glyphs, cell by cell, wherever the lines are. No recorded
// macOS screen is used: the tests prove the runner and its screen checks,
// not the script's phrases.

const (
	glyphW, glyphH = 7, 13
	screenW        = 640
	screenH        = 400
)

// line is a line of a synthetic screen and where it starts.
type line struct {
	text string
	x, y int // the top left of its first cell
}

// render draws a screen of lines on white.
func render(lines ...line) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, screenW, screenH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	d := font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13}
	for _, l := range lines {
		d.Dot = fixed.P(l.x, l.y+basicfont.Face7x13.Ascent)
		d.DrawString(l.text)
	}
	return img
}

// titled is a screen with a title and a few lines of body at usual places.
func titled(title string, body ...string) *image.RGBA {
	ls := []line{{title, 120, 60}}
	for i, b := range body {
		ls = append(ls, line{b, 80, 120 + 30*i})
	}
	return render(ls...)
}

// glyphReader reads synthetic screens (Reader).
type glyphReader struct {
	glyphs map[string]rune
}

func newGlyphReader() *glyphReader {
	g := &glyphReader{glyphs: map[string]rune{}}
	for r := rune(0x21); r < 0x7f; r++ {
		img := render(line{string(r), 0, 0})
		g.glyphs[cellKey(img, 0, 0)] = r
	}
	return g
}

// cellKey is a cell's ink as a string of 0 and 1.
func cellKey(img *image.RGBA, x0, y0 int) string {
	var b strings.Builder
	for y := y0; y < y0+glyphH; y++ {
		for x := x0; x < x0+glyphW; x++ {
			if ink(img, x, y) {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
	}
	return b.String()
}

func ink(img *image.RGBA, x, y int) bool {
	if !(image.Point{x, y}.In(img.Bounds())) {
		return false
	}
	c := img.RGBAAt(x, y)
	return int(c.R)+int(c.G)+int(c.B) < 3*128
}

var blankCell = strings.Repeat("0", glyphW*glyphH)

func (g *glyphReader) Read(ctx context.Context, src image.Image) ([]Text, error) {
	img := image.NewRGBA(src.Bounds())
	draw.Draw(img, img.Bounds(), src, src.Bounds().Min, draw.Src)
	b := img.Bounds()
	var out []Text
	// Bands of rows with ink, separated by rows without.
	rowInk := func(y int) bool {
		for x := b.Min.X; x < b.Max.X; x++ {
			if ink(img, x, y) {
				return true
			}
		}
		return false
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		if !rowInk(y) {
			continue
		}
		y0 := y
		for y < b.Max.Y && rowInk(y) {
			y++
		}
		out = append(out, g.band(img, y0, y)...)
	}
	return out, nil
}

// band reads the text of rows y0..y1: the cell grid (top and left) that
// reads the most glyphs wins.
func (g *glyphReader) band(img *image.RGBA, y0, y1 int) []Text {
	left := img.Bounds().Max.X
	for y := y0; y < y1; y++ {
		for x := 0; x < left; x++ {
			if ink(img, x, y) {
				left = x
				break
			}
		}
	}
	var best []Text
	bestScore := -1
	for top := y1 - glyphH; top <= y0; top++ {
		for ox := 0; ox < glyphW; ox++ {
			texts, score := g.row(img, top, left-ox)
			if score > bestScore {
				best, bestScore = texts, score
			}
		}
	}
	return best
}

// row reads cells from x on at top: words of glyphs, a blank cell a
// space, three blank cells the end of a text.
func (g *glyphReader) row(img *image.RGBA, top, x int) ([]Text, int) {
	var out []Text
	score := 0
	var cur strings.Builder
	start, blanks := -1, 0
	flush := func(end int) {
		if start >= 0 {
			out = append(out, Text{String: strings.TrimSpace(cur.String()), Box: image.Rect(start, top, end, top+glyphH)})
		}
		cur.Reset()
		start = -1
	}
	for cx := x; cx+glyphW <= img.Bounds().Max.X; cx += glyphW {
		key := cellKey(img, cx, top)
		if key == blankCell {
			blanks++
			if blanks == 3 {
				flush(cx - 2*glyphW)
			} else if start >= 0 {
				cur.WriteByte(' ')
			}
			continue
		}
		blanks = 0
		r, ok := g.glyphs[key]
		if !ok {
			r = '?'
		} else {
			score++
		}
		if start < 0 {
			start = cx
		}
		cur.WriteRune(r)
	}
	flush(img.Bounds().Max.X)
	return out, score
}

// black is a booting VM's screen.
func black() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, screenW, screenH))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.Black}, image.Point{}, draw.Src)
	return img
}
