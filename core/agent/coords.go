package agent

import "math"

// mapping converts the pixels of the screenshot the model saw to the
// guest's logical points (docs/providers.md: screenshots are fitted in
// XGA's box and the points the model names mapped back).
type mapping struct {
	shotW, shotH     int // screenshot pixels
	screenW, screenH int // guest logical points
}

// onShot reports whether a point lies on the screenshot.
func (m mapping) onShot(x, y float64) bool {
	return x >= 0 && y >= 0 && x < float64(m.shotW) && y < float64(m.shotH)
}

// toGuest maps a screenshot pixel to guest points, clamped to the screen
// (a point on the screenshot's last pixel may round past it).
func (m mapping) toGuest(x, y float64) (float64, float64) {
	gx := x * float64(m.screenW) / float64(m.shotW)
	gy := y * float64(m.screenH) / float64(m.shotH)
	return clamp(math.Round(gx), float64(m.screenW-1)), clamp(math.Round(gy), float64(m.screenH-1))
}

func clamp(v, hi float64) float64 { return math.Max(0, math.Min(v, hi)) }

// toShot maps guest points to the pixels of the screenshot (the inverse of
// toGuest, unclamped).
func (m mapping) toShot(x, y float64) (float64, float64) {
	return x * float64(m.shotW) / float64(m.screenW), y * float64(m.shotH) / float64(m.screenH)
}
