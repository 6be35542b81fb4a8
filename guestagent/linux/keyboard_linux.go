package linux

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// remapQuiet is how long a spare keycode must have been unused before it is
// given another character: clients read the keymap when they see our
// MappingNotify, possibly after later remaps, so a keycode still "in flight"
// must not change meaning.
const remapQuiet = 100 * time.Millisecond

// Spare keycodes are taken from this range. Keycode 248 and up exist in the
// X keymap but are unreliable in practice: measured on Xvfb with GTK 3, a
// character typed on keycode 248 arrived after the ones typed later.
const (
	minSpare = 9
	maxSpare = 247
)

// keyPos is where a keysym sits in the keymap.
type keyPos struct {
	code  xproto.Keycode
	shift bool // at level 1 (with Shift)
}

// keyboard types keys and text through XTEST. Characters the keymap lacks
// are typed by mapping them onto spare keycodes (ones with no keysym), one
// spare per distinct character in flight.
type keyboard struct {
	conn     *xgb.Conn
	root     xproto.Window
	min, max xproto.Keycode

	// mu guards everything below.
	mu      sync.Mutex
	stale   bool
	perCode int
	index   map[uint32]keyPos // keysym -> position, from the keymap
	spares  []xproto.Keycode  // keycodes with no keysym when we started
	ours    map[xproto.Keycode]uint32
	used    map[xproto.Keycode]time.Time // when each spare last typed
	// held counts the holds (KeyDown) of each keycode: a held spare is
	// never given another character.
	held    map[xproto.Keycode]int
	shiftKC xproto.Keycode
}

func newKeyboard(conn *xgb.Conn, setup *xproto.SetupInfo, root xproto.Window) (*keyboard, error) {
	k := &keyboard{
		conn: conn, root: root, min: setup.MinKeycode, max: setup.MaxKeycode,
		ours: map[xproto.Keycode]uint32{}, used: map[xproto.Keycode]time.Time{}, held: map[xproto.Keycode]int{},
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.loadLocked(true); err != nil {
		return nil, err
	}
	sh, ok := k.index[0xffe1]
	if !ok {
		return nil, fmt.Errorf("the X keymap has no Shift_L key")
	}
	k.shiftKC = sh.code
	return k, nil
}

// loadLocked reads the keymap. The first load also records the spare keycodes.
func (k *keyboard) loadLocked(first bool) error {
	count := int(k.max) - int(k.min) + 1
	reply, err := xproto.GetKeyboardMapping(k.conn, k.min, byte(count)).Reply()
	if err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "read the X keymap: %v", err)
	}
	k.perCode = int(reply.KeysymsPerKeycode)
	k.index = make(map[uint32]keyPos, count*2)
	for i := range count {
		code := xproto.Keycode(int(k.min) + i)
		syms := reply.Keysyms[i*k.perCode : (i+1)*k.perCode]
		empty := true
		for level, s := range syms {
			if s != 0 {
				empty = false
			}
			// A keypad keysym at the Shift level is not typed with Shift
			// (XKB's keypad types take NumLock for it; with Shift alone
			// KP_Insert comes, not KP_0): a spare keycode types it.
			if level > 1 || s == 0 || level == 1 && keypadKeysym(uint32(s)) {
				continue
			}
			if _, seen := k.index[uint32(s)]; !seen {
				k.index[uint32(s)] = keyPos{code: code, shift: level == 1}
			}
		}
		if first && empty && code >= minSpare && code <= maxSpare {
			k.spares = append(k.spares, code)
		}
	}
	k.stale = false
	return nil
}

// invalidate marks the keymap for re-reading (another client changed it).
func (k *keyboard) invalidate() {
	k.mu.Lock()
	k.stale = true
	k.mu.Unlock()
}

func (k *keyboard) key(press bool, code xproto.Keycode) {
	typ := byte(xproto.KeyRelease)
	if press {
		typ = xproto.KeyPress
	}
	xtest.FakeInput(k.conn, typ, byte(code), 0, k.root, 0, 0, 0)
}

// stroke is one key to tap, with Shift held when shift is set.
type stroke struct {
	code  xproto.Keycode
	shift bool
}

// typeKeysyms taps the keys of syms in order, holding mods (keycodes) around
// each tap.
func (k *keyboard) typeKeysyms(syms []uint32, mods []xproto.Keycode) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stale {
		if err := k.loadLocked(false); err != nil {
			return err
		}
	}
	for len(syms) > 0 {
		// A chunk needs no more spare keycodes than there are.
		strokes, n, err := k.planLocked(syms)
		if err != nil {
			return err
		}
		for _, s := range strokes {
			for _, m := range mods {
				k.key(true, m)
			}
			if s.shift {
				k.key(true, k.shiftKC)
			}
			k.key(true, s.code)
			k.key(false, s.code)
			if s.shift {
				k.key(false, k.shiftKC)
			}
			for i := len(mods) - 1; i >= 0; i-- {
				k.key(false, mods[i])
			}
		}
		now := time.Now()
		for _, s := range strokes {
			if _, ok := k.ours[s.code]; ok {
				k.used[s.code] = now
			}
		}
		syms = syms[n:]
	}
	return nil
}

// planLocked turns the longest prefix of syms that fits the spare keycodes
// into strokes, remapping spares as needed, and returns how many it covered.
func (k *keyboard) planLocked(syms []uint32) ([]stroke, int, error) {
	inChunk := map[xproto.Keycode]bool{}
	strokes := make([]stroke, 0, len(syms))
	for i, s := range syms {
		if pos, ok := k.index[s]; ok {
			strokes = append(strokes, stroke{code: pos.code, shift: pos.shift})
			continue
		}
		code, ok := k.spareFor(s, inChunk)
		if !ok {
			if i == 0 {
				return nil, 0, protocol.Errorf(protocol.CodeUnavailable, "no spare keycode to type %U", rune(s&0xffffff))
			}
			return strokes, i, nil
		}
		inChunk[code] = true
		strokes = append(strokes, stroke{code: code})
	}
	return strokes, len(syms), nil
}

// spareFor returns a spare keycode that types sym, mapping one if needed. It
// never reuses a keycode of the current chunk, and waits out remapQuiet
// before reusing one typed recently.
func (k *keyboard) spareFor(sym uint32, inChunk map[xproto.Keycode]bool) (xproto.Keycode, bool) {
	for code, s := range k.ours {
		if s == sym {
			return code, true
		}
	}
	var pick xproto.Keycode
	var oldest time.Time
	found := false
	for _, code := range k.spares {
		if inChunk[code] || k.held[code] > 0 {
			continue
		}
		if _, mapped := k.ours[code]; !mapped {
			pick, found = code, true
			break
		}
		if t := k.used[code]; !found || t.Before(oldest) {
			pick, oldest, found = code, t, true
		}
	}
	if !found {
		return 0, false
	}
	if wait := remapQuiet - time.Since(k.used[pick]); wait > 0 {
		// Make sure what was typed with it has reached the server first.
		xproto.GetInputFocus(k.conn).Reply()
		time.Sleep(wait)
	}
	syms := make([]xproto.Keysym, k.perCode)
	syms[0] = xproto.Keysym(sym)
	if k.perCode > 1 {
		syms[1] = xproto.Keysym(sym)
	}
	xproto.ChangeKeyboardMapping(k.conn, 1, pick, byte(k.perCode), syms)
	k.ours[pick] = sym
	return pick, true
}

// modifierCodes returns the keycodes of normalised modifier names, each
// once (command and control are the same key); fn has no X equivalent and
// is ignored.
func (k *keyboard) modifierCodes(mods []string) ([]xproto.Keycode, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var codes []xproto.Keycode
	for _, m := range mods {
		sym, ok := modifierKeysyms[m]
		if !ok {
			continue
		}
		pos, ok := k.index[sym]
		if !ok {
			return nil, protocol.Errorf(protocol.CodeUnsupported, "the X keymap has no key for modifier %s", m)
		}
		if !slices.Contains(codes, pos.code) {
			codes = append(codes, pos.code)
		}
	}
	return codes, nil
}

// hold returns the stroke that types sym and marks its keycode held until
// unhold: a spare keycode is mapped to sym when the keymap lacks it, and
// is not remapped while held.
func (k *keyboard) hold(sym uint32) (stroke, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stale {
		if err := k.loadLocked(false); err != nil {
			return stroke{}, err
		}
	}
	var st stroke
	if pos, ok := k.index[sym]; ok {
		st = stroke{code: pos.code, shift: pos.shift}
	} else if code, ok := k.spareFor(sym, nil); ok {
		st = stroke{code: code}
	} else {
		return stroke{}, protocol.Errorf(protocol.CodeUnavailable, "no spare keycode to hold %U", rune(sym&0xffffff))
	}
	k.held[st.code]++
	return st, nil
}

// unhold ends a hold of code.
func (k *keyboard) unhold(code xproto.Keycode) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held[code]--; k.held[code] <= 0 {
		delete(k.held, code)
	}
	if _, ok := k.ours[code]; ok {
		k.used[code] = time.Now()
	}
}

// restore gives the spare keycodes back their empty mapping.
func (k *keyboard) restore() {
	k.mu.Lock()
	defer k.mu.Unlock()
	empty := make([]xproto.Keysym, k.perCode)
	for code := range k.ours {
		xproto.ChangeKeyboardMapping(k.conn, 1, code, byte(k.perCode), empty)
	}
	if len(k.ours) > 0 {
		xproto.GetInputFocus(k.conn).Reply()
	}
	clear(k.ours)
}
