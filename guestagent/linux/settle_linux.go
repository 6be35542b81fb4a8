package linux

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/guestagent/settle"
)

// damageSource is the X server's report of redraws (settle.FrameSource):
// a DAMAGE object of its own on the root window (the capture's object
// accumulates regions; this one only tells time), emptied at each event
// so that the next drawing reports again. The object lives as long as
// the connection; Start and Stop only say whom the event loop tells.
type damageSource struct {
	conn *xgb.Conn
	id   damage.Damage

	// mu guards drawn.
	mu    sync.Mutex
	drawn func()
}

var _ settle.FrameSource = (*damageSource)(nil)

func newDamageSource(conn *xgb.Conn, root xproto.Window) (*damageSource, error) {
	if err := damage.Init(conn); err != nil {
		return nil, fmt.Errorf("no DAMAGE extension: %w", err)
	}
	if err := xfixes.Init(conn); err != nil {
		return nil, fmt.Errorf("no XFIXES extension: %w", err)
	}
	if _, err := xfixes.QueryVersion(conn, 2, 0).Reply(); err != nil {
		return nil, fmt.Errorf("XFIXES: %w", err)
	}
	if _, err := damage.QueryVersion(conn, 1, 1).Reply(); err != nil {
		return nil, fmt.Errorf("DAMAGE: %w", err)
	}
	id, err := damage.NewDamageId(conn)
	if err == nil {
		err = damage.CreateChecked(conn, id, xproto.Drawable(root), damage.ReportLevelNonEmpty).Check()
	}
	if err != nil {
		return nil, fmt.Errorf("DAMAGE on the root window: %w", err)
	}
	return &damageSource{conn: conn, id: id}, nil
}

// Start implements settle.FrameSource.
func (s *damageSource) Start(ctx context.Context, drawn func(), lost func(error)) error {
	if s == nil {
		return errors.New("no DAMAGE")
	}
	s.mu.Lock()
	s.drawn = drawn
	s.mu.Unlock()
	return nil
}

// Stop implements settle.FrameSource.
func (s *damageSource) Stop() {
	s.mu.Lock()
	s.drawn = nil
	s.mu.Unlock()
}

// event notes a damage event; it runs on the event loop.
func (s *damageSource) event(e damage.NotifyEvent) {
	if s == nil || e.Damage != s.id {
		return
	}
	s.mu.Lock()
	drawn := s.drawn
	s.mu.Unlock()
	if drawn != nil {
		drawn()
	}
	damage.Subtract(s.conn, s.id, xfixes.RegionNone, xfixes.RegionNone)
}

func (s *damageSource) close() {
	if s != nil {
		damage.Destroy(s.conn, s.id)
	}
}
