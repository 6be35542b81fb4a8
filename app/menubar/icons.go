package menubar

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// Icon returns the PNG of the menu-bar icon for a state (scripts/icons
// writes them into Resources/ for the bundle).
func Icon(s State, template bool) []byte { return icon(s, template) }

// icon draws the menu-bar icon for a state: a hexagon (a hive cell),
// outlined when idle, filled when working, filled with a notch of
// attention (a dot) when the user is needed. Template images are black on
// transparent (macOS tints them); regular ones are coloured (Linux trays).
func icon(s State, template bool) []byte {
	const size = 44
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	ink := color.NRGBA{0xE0, 0x9A, 0x1B, 0xFF} // honey
	if template {
		ink = color.NRGBA{0, 0, 0, 0xFF}
	}
	cx, cy, r := float64(size)/2, float64(size)/2, float64(size)/2-3
	filled := s != Idle
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			d := hexDistance(float64(x)+0.5-cx, float64(y)+0.5-cy, r)
			switch {
			case filled && d <= 0:
				img.SetNRGBA(x, y, ink)
			case !filled && d <= 0 && d > -4:
				img.SetNRGBA(x, y, ink)
			}
		}
	}
	if s == Attention {
		dot := color.NRGBA{0xD9, 0x2D, 0x20, 0xFF}
		if template {
			dot = color.NRGBA{0, 0, 0, 0}
		}
		for y := 0; y < size; y++ {
			for x := 0; x < size; x++ {
				if math.Hypot(float64(x)-32, float64(y)-12) <= 9 {
					img.SetNRGBA(x, y, dot)
				}
			}
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// hexDistance is negative inside a pointy-top hexagon of circumradius r.
func hexDistance(x, y, r float64) float64 {
	x, y = math.Abs(x), math.Abs(y)
	return math.Max(x/2+y*math.Sqrt(3)/2, x) - r*math.Sqrt(3)/2
}
