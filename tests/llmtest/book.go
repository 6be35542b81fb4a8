package llmtest

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// Book is the scripts of a scripted provider, whatever its protocol's
// turns T: the turns of each marker, the answer to title requests, and the
// bodies each was sent. Its methods are safe for concurrent use.
type Book[T any] struct {
	// mu guards everything below.
	mu      sync.Mutex
	scripts map[string]*script[T]
	title   *T
	titles  []string
}

type script[T any] struct {
	turns  []T
	next   int
	bodies []string
}

// Script sets the answers to requests containing marker.
func (b *Book[T]) Script(marker string, turns ...T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.scripts == nil {
		b.scripts = map[string]*script[T]{}
	}
	b.scripts[marker] = &script[T]{turns: turns}
}

// TitleTurn sets the answer to title requests as a turn (held, say).
func (b *Book[T]) TitleTurn(turn T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.title = &turn
}

// Titles returns the bodies of the title requests.
func (b *Book[T]) Titles() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.titles)
}

// Requests returns the bodies of the requests that matched marker.
func (b *Book[T]) Requests(marker string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sc := b.scripts[marker]; sc != nil {
		return slices.Clone(sc.bodies)
	}
	return nil
}

// Next picks the turn that answers body: the title turn for a title
// request (IsTitleRequest), else the next turn of the script whose marker
// the body contains (or that match names, when match is set), a script's
// last turn again when repeats says it repeats; otherwise(title) when
// there is none. marker is the script's, "" for none.
func (b *Book[T]) Next(body string, match func(string) string, repeats func(T) bool, otherwise func(title bool) T) (turn T, marker string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if IsTitleRequest([]byte(body)) {
		b.titles = append(b.titles, body)
		if b.title != nil {
			return *b.title, ""
		}
		return otherwise(true), ""
	}
	var pick *script[T]
	picked := ""
	if match != nil {
		picked = match(body)
	}
	markers := make([]string, 0, len(b.scripts))
	for m := range b.scripts {
		markers = append(markers, m)
	}
	sort.Strings(markers)
	for _, m := range markers {
		sc := b.scripts[m]
		if match != nil && m != picked || match == nil && !strings.Contains(body, m) {
			continue
		}
		if pick == nil || (pick.next >= len(pick.turns) && sc.next < len(sc.turns)) {
			pick, marker = sc, m
		}
	}
	if pick == nil {
		return otherwise(false), ""
	}
	pick.bodies = append(pick.bodies, body)
	switch n := len(pick.turns); {
	case pick.next < n:
		pick.next++
		return pick.turns[pick.next-1], marker
	case n > 0 && repeats(pick.turns[n-1]):
		return pick.turns[n-1], marker
	}
	return otherwise(false), marker
}
