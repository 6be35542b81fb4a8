package darwin

import (
	"sync"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// buttonsDown is which mouse buttons the driver holds down (mouse_down
// without mouse_up yet). macOS tells a drag from a move by the event's
// type, not by a button state it keeps: a move while a button is down
// must be posted as that button's dragged event.
type buttonsDown struct {
	// mu guards down.
	mu   sync.Mutex
	down map[string]bool
}

func (b *buttonsDown) set(button string, down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down == nil {
		b.down = map[string]bool{}
	}
	if down {
		b.down[button] = true
	} else {
		delete(b.down, button)
	}
}

// dragging returns the button a move drags (left before right before
// middle, as macOS reports a drag with several down), or "" for a plain
// move.
func (b *buttonsDown) dragging() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, button := range []string{protocol.ButtonLeft, protocol.ButtonRight, protocol.ButtonMiddle} {
		if b.down[button] {
			return button
		}
	}
	return ""
}
