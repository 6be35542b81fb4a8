package linux

import (
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// atoms interns X atom names once each.
type atoms struct {
	conn *xgb.Conn
	// mu guards byName.
	mu     sync.Mutex
	byName map[string]xproto.Atom
}

func newAtoms(conn *xgb.Conn) *atoms {
	return &atoms{conn: conn, byName: map[string]xproto.Atom{}}
}

// get returns the atom for name, creating it; AtomNone on error.
func (a *atoms) get(name string) xproto.Atom {
	a.mu.Lock()
	defer a.mu.Unlock()
	if at, ok := a.byName[name]; ok {
		return at
	}
	r, err := xproto.InternAtom(a.conn, false, uint16(len(name)), name).Reply()
	if err != nil {
		return xproto.AtomNone
	}
	a.byName[name] = r.Atom
	return r.Atom
}
