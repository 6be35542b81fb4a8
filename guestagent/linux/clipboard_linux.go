package linux

import (
	"context"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// clipboardTimeout bounds how long a read waits for the selection owner.
const clipboardTimeout = 3 * time.Second

// clipboard owns and reads the CLIPBOARD selection through a hidden window.
// After clipboard_write the agent stays the owner and serves every paste
// until another client takes the selection.
type clipboard struct {
	conn  *xgb.Conn
	win   xproto.Window
	atoms *atoms
	// maxChunk is the largest property the server accepts in one request.
	maxChunk int

	// mu guards owned, text and waiters.
	mu      sync.Mutex
	owned   bool
	text    string
	waiters []chan xproto.SelectionNotifyEvent
	// readMu serialises reads (one conversion property).
	readMu sync.Mutex
	// incr receives PropertyNotify(NewValue) on our property during an INCR read.
	incr chan struct{}
}

func newClipboard(conn *xgb.Conn, scr *xproto.ScreenInfo, at *atoms) (*clipboard, error) {
	id, err := xproto.NewWindowId(conn)
	if err != nil {
		return nil, err
	}
	err = xproto.CreateWindowChecked(conn, 0, id, scr.Root, -10, -10, 1, 1, 0,
		xproto.WindowClassInputOnly, 0, xproto.CwEventMask, []uint32{xproto.EventMaskPropertyChange}).Check()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "create the clipboard window: %v", err)
	}
	max := int(xproto.Setup(conn).MaximumRequestLength)*4 - 64
	return &clipboard{conn: conn, win: id, atoms: at, maxChunk: max, incr: make(chan struct{}, 16)}, nil
}

func (c *clipboard) write(text string) error {
	if len(text) > c.maxChunk {
		return protocol.Errorf(protocol.CodeTooLarge, "clipboard text of %d bytes is over the %d bytes this display takes at once; use write_file", len(text), c.maxChunk)
	}
	sel := c.atoms.get("CLIPBOARD")
	c.mu.Lock()
	c.text, c.owned = text, true
	c.mu.Unlock()
	if err := xproto.SetSelectionOwnerChecked(c.conn, c.win, sel, xproto.TimeCurrentTime).Check(); err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "take the clipboard: %v", err)
	}
	owner, err := xproto.GetSelectionOwner(c.conn, sel).Reply()
	if err != nil || owner.Owner != c.win {
		return protocol.Errorf(protocol.CodeUnavailable, "another client holds the clipboard")
	}
	return nil
}

func (c *clipboard) read(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.owned {
		t := c.text
		c.mu.Unlock()
		return t, nil
	}
	c.mu.Unlock()
	sel := c.atoms.get("CLIPBOARD")
	owner, err := xproto.GetSelectionOwner(c.conn, sel).Reply()
	if err != nil {
		return "", protocol.Errorf(protocol.CodeUnavailable, "read the clipboard: %v", err)
	}
	if owner.Owner == xproto.WindowNone {
		return "", nil
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	prop := c.atoms.get("HIVECREW_CLIPBOARD")
	ch := make(chan xproto.SelectionNotifyEvent, 1)
	c.mu.Lock()
	c.waiters = append(c.waiters, ch)
	c.mu.Unlock()
	xproto.ConvertSelection(c.conn, c.win, sel, c.atoms.get("UTF8_STRING"), prop, xproto.TimeCurrentTime)
	ctx, cancel := context.WithTimeout(ctx, clipboardTimeout)
	defer cancel()
	var ev xproto.SelectionNotifyEvent
	select {
	case ev = <-ch:
	case <-ctx.Done():
		return "", protocol.Errorf(protocol.CodeUnavailable, "the clipboard owner did not answer within %s", clipboardTimeout)
	}
	if ev.Property == xproto.AtomNone {
		return "", nil // the owner has no text
	}
	return c.readProperty(ctx, prop)
}

// readProperty reads and deletes our conversion property, following the
// INCR protocol for large transfers.
func (c *clipboard) readProperty(ctx context.Context, prop xproto.Atom) (string, error) {
	r, err := xproto.GetProperty(c.conn, true, c.win, prop, xproto.GetPropertyTypeAny, 0, 1<<24).Reply()
	if err != nil {
		return "", protocol.Errorf(protocol.CodeUnavailable, "read the clipboard: %v", err)
	}
	if r.Type != c.atoms.get("INCR") {
		return string(r.Value), nil
	}
	var out []byte
	for {
		select {
		case <-c.incr:
		case <-ctx.Done():
			return "", protocol.Errorf(protocol.CodeUnavailable, "the clipboard owner stopped sending")
		}
		r, err := xproto.GetProperty(c.conn, true, c.win, prop, xproto.GetPropertyTypeAny, 0, 1<<24).Reply()
		if err != nil {
			return "", protocol.Errorf(protocol.CodeUnavailable, "read the clipboard: %v", err)
		}
		if len(r.Value) == 0 && r.Type != xproto.AtomNone {
			return string(out), nil
		}
		out = append(out, r.Value...)
		if len(out) > protocol.MaxLineBytes/2 {
			return "", protocol.Errorf(protocol.CodeTooLarge, "clipboard text over %d bytes", protocol.MaxLineBytes/2)
		}
	}
}

// notified hands a SelectionNotify to the waiting read.
func (c *clipboard) notified(e xproto.SelectionNotifyEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiters) == 0 {
		return
	}
	ch := c.waiters[0]
	c.waiters = c.waiters[1:]
	ch <- e
}

func (c *clipboard) propertyChanged(e xproto.PropertyNotifyEvent) {
	if e.Window == c.win && e.State == xproto.PropertyNewValue {
		select {
		case c.incr <- struct{}{}:
		default:
		}
	}
}

// lost records that another client took the selection.
func (c *clipboard) lost(e xproto.SelectionClearEvent) {
	if e.Owner != c.win {
		return
	}
	c.mu.Lock()
	c.owned, c.text = false, ""
	c.mu.Unlock()
}

// serve answers another client's request for our selection.
func (c *clipboard) serve(e xproto.SelectionRequestEvent) {
	c.mu.Lock()
	text, owned := c.text, c.owned
	c.mu.Unlock()
	prop := e.Property
	if prop == xproto.AtomNone {
		prop = e.Target // obsolete clients
	}
	utf8, str, textAtom, targets := c.atoms.get("UTF8_STRING"), xproto.Atom(xproto.AtomString), c.atoms.get("TEXT"), c.atoms.get("TARGETS")
	plain := c.atoms.get("text/plain;charset=utf-8")
	ok := owned
	if ok {
		switch e.Target {
		case targets:
			list := []xproto.Atom{targets, utf8, str, textAtom, plain}
			data := make([]byte, 4*len(list))
			for i, a := range list {
				xgb.Put32(data[i*4:], uint32(a))
			}
			xproto.ChangeProperty(c.conn, xproto.PropModeReplace, e.Requestor, prop, xproto.AtomAtom, 32, uint32(len(list)), data)
		case utf8, str, textAtom, plain:
			typ := e.Target
			if typ == textAtom {
				typ = utf8
			}
			xproto.ChangeProperty(c.conn, xproto.PropModeReplace, e.Requestor, prop, typ, 8, uint32(len(text)), []byte(text))
		default:
			ok = false
		}
	}
	if !ok {
		prop = xproto.AtomNone // refuse
	}
	ev := xproto.SelectionNotifyEvent{Time: e.Time, Requestor: e.Requestor, Selection: e.Selection, Target: e.Target, Property: prop}
	xproto.SendEvent(c.conn, false, e.Requestor, 0, string(ev.Bytes()))
}
