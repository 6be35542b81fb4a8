package sandbox

import (
	"slices"
	"testing"
)

// TestIDShiftMapsOneIDAndKeepsTheRest: the map is a bijection on every id
// but the two moved: from shows as to, every id other than from and to
// shows as itself, to as stored maps to nothing (nobody).
func TestIDShiftMapsOneIDAndKeepsTheRest(t *testing.T) {
	for _, s := range []idShift{{999, 2_000_000_003}, {2_000_000_003, 999}, {0, 1}, {maxID - 1, 5}} {
		m := s.mappings()
		show := func(id uint32) (uint32, bool) {
			for _, r := range m {
				if id >= uint32(r.ContainerID) && uint64(id) < uint64(r.ContainerID)+uint64(r.Size) {
					return uint32(r.HostID) + (id - uint32(r.ContainerID)), true
				}
			}
			return 0, false
		}
		if got, ok := show(s.from); !ok || got != s.to {
			t.Errorf("%v: %d shows as %d (%v)", s, s.from, got, ok)
		}
		if _, ok := show(s.to); ok {
			t.Errorf("%v: a file stored as %d shows as someone", s, s.to)
		}
		for _, id := range []uint32{0, 1, 998, 1000, 65534, 2_000_000_002, 2_000_000_004, maxID - 1} {
			if id == s.from || id == s.to {
				continue
			}
			if got, ok := show(id); !ok || got != id {
				t.Errorf("%v: %d shows as %d (%v)", s, id, got, ok)
			}
		}
		// No two lines overlap, inside or outside (the kernel refuses that).
		var total uint64
		for _, side := range []func(i int) (int, int){
			func(i int) (int, int) { return m[i].ContainerID, m[i].Size },
			func(i int) (int, int) { return m[i].HostID, m[i].Size },
		} {
			idx := make([]int, len(m))
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(a, b int) int { x, _ := side(a); y, _ := side(b); return x - y })
			for k := 1; k < len(idx); k++ {
				a, an := side(idx[k-1])
				b, _ := side(idx[k])
				if a+an > b {
					t.Errorf("%v: lines overlap: %v", s, m)
				}
			}
		}
		for _, r := range m {
			total += uint64(r.Size)
		}
		if total != maxID-1 {
			t.Errorf("%v: maps %d ids, want every id but one (%d)", s, total, uint64(maxID-1))
		}
		if len(m) > 340 {
			t.Errorf("%v: %d lines, over the kernel's 340", s, len(m))
		}
	}
}
