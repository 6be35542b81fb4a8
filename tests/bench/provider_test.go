package main

import "testing"

func TestFindMarker(t *testing.T) {
	for body, want := range map[string]string{
		`{"content":"Keep clicking [[busy03]]"}`:               "[[busy03]]",
		`{"content":"a [[ b [[not a marker]] [[solo]] [[x]]"}`: "[[solo]]",
		`{"content":"no marker [["}`:                           "",
		`[[edge]]`:                                             "[[edge]]",
	} {
		if got := findMarker([]byte(body)); got != want {
			t.Errorf("findMarker(%s) = %q, want %q", body, got, want)
		}
	}
}
