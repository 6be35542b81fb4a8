package linux

import (
	"slices"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/guestagent/frame"
)

func TestDamagedRows(t *testing.T) {
	got := damagedRows([]xproto.Rectangle{
		{X: 5, Y: 100, Width: 10, Height: 20},
		{X: 0, Y: 10, Width: 10, Height: 5},
		{X: 50, Y: 110, Width: 10, Height: 30}, // overlaps the first
		{X: 0, Y: 140, Width: 1, Height: 1},    // touches the merged one
		{X: 0, Y: -4, Width: 3, Height: 6},     // above the screen in part
		{X: 0, Y: 790, Width: 3, Height: 40},   // below it in part
		{X: 0, Y: 900, Width: 3, Height: 4},    // off the screen
	}, 800)
	want := []frame.Rows{{Y0: 0, Y1: 2}, {Y0: 10, Y1: 15}, {Y0: 100, Y1: 141}, {Y0: 790, Y1: 800}}
	if !slices.Equal(got, want) {
		t.Errorf("damagedRows = %v, want %v", got, want)
	}
}
