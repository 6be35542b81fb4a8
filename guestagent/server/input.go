package server

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// releaseTimeout bounds letting go of a key or button after its request
// ended (cancelled, or its connection gone).
const releaseTimeout = 5 * time.Second

// held is what one connection holds down across requests: the mouse
// buttons its mouse_down pressed and no mouse_up released yet. They are
// released when the connection ends, so that a host that lost the guest
// mid-drag does not leave a button down.
type held struct {
	// mu guards buttons.
	mu      sync.Mutex
	buttons map[string]bool
}

type heldKey struct{}

// withHeld returns ctx carrying a connection's held state.
func withHeld(ctx context.Context) (context.Context, *held) {
	h := &held{buttons: map[string]bool{}}
	return context.WithValue(ctx, heldKey{}, h), h
}

// heldFrom returns the held state of ctx's connection, or nil.
func heldFrom(ctx context.Context) *held {
	h, _ := ctx.Value(heldKey{}).(*held)
	return h
}

func (h *held) set(button string, down bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if down {
		h.buttons[button] = true
	} else {
		delete(h.buttons, button)
	}
}

// releaseHeld lets go of the buttons a connection left down.
func (s *Server) releaseHeld(h *held) {
	h.mu.Lock()
	buttons := slices.Sorted(maps.Keys(h.buttons))
	clear(h.buttons)
	h.mu.Unlock()
	for _, b := range buttons {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		err := s.cfg.Driver.MouseButton(ctx, b, false)
		cancel()
		if err != nil {
			s.cfg.Log.Error("release a mouse button the connection left down", "button", b, "err", err)
		} else {
			s.cfg.Log.Info("released a mouse button the connection left down", "button", b)
		}
	}
}

// parseButton checks a button name; empty is left.
func parseButton(b string) (string, error) {
	switch b {
	case "":
		return protocol.ButtonLeft, nil
	case protocol.ButtonLeft, protocol.ButtonRight, protocol.ButtonMiddle:
		return b, nil
	}
	return "", protocol.Errorf(protocol.CodeInvalidParams, "button %q: use left, right or middle", b)
}

func (s *Server) click(ctx context.Context, p protocol.ClickParams) error {
	if err := s.onScreen(p.X, p.Y); err != nil {
		return err
	}
	button, err := parseButton(p.Button)
	if err != nil {
		return err
	}
	count := 0
	switch p.ClickType {
	case "", protocol.ClickSingle:
		count = 1
	case protocol.ClickDouble:
		count = 2
	case protocol.ClickTriple:
		count = 3
	default:
		return protocol.Errorf(protocol.CodeInvalidParams, "clickType %q: use single, double or triple", p.ClickType)
	}
	mods, err := NormalizeModifiers(p.Modifiers)
	if err != nil {
		return err
	}
	return s.cfg.Driver.MouseClick(ctx, p.X, p.Y, button, count, mods)
}

func (s *Server) scroll(ctx context.Context, p protocol.ScrollParams) error {
	if err := s.onScreen(p.X, p.Y); err != nil {
		return err
	}
	if !(math.Abs(p.DeltaX) <= 1000 && math.Abs(p.DeltaY) <= 1000) {
		return protocol.Errorf(protocol.CodeInvalidParams, "scroll deltas are limited to 1000 lines")
	}
	mods, err := NormalizeModifiers(p.Modifiers)
	if err != nil {
		return err
	}
	p.Modifiers = mods
	return s.cfg.Driver.Scroll(ctx, p)
}

// mouseButton serves mouse_down (down) and mouse_up.
func (s *Server) mouseButton(down bool) func(context.Context, protocol.ButtonParams) error {
	return func(ctx context.Context, p protocol.ButtonParams) error {
		button, err := parseButton(p.Button)
		if err != nil {
			return err
		}
		if (p.X == nil) != (p.Y == nil) {
			return protocol.Errorf(protocol.CodeInvalidParams, "give both x and y, or neither (to use the pointer where it is)")
		}
		if p.X != nil {
			if err := s.onScreen(*p.X, *p.Y); err != nil {
				return err
			}
			if err := s.cfg.Driver.MouseMove(ctx, *p.X, *p.Y); err != nil {
				return err
			}
		}
		if err := s.cfg.Driver.MouseButton(ctx, button, down); err != nil {
			return err
		}
		heldFrom(ctx).set(button, down)
		return nil
	}
}

// holdKey presses a key with its modifiers, holds it for p.Seconds and
// releases it; a cancelled request (or a connection that ended) releases
// it at once.
func (s *Server) holdKey(ctx context.Context, p protocol.HoldKeyParams) (err error) {
	key, mods, err := normalizeStroke(p.Key, p.Modifiers)
	if err != nil {
		return err
	}
	if !(p.Seconds > 0 && p.Seconds <= protocol.MaxHoldSeconds) {
		return protocol.Errorf(protocol.CodeInvalidParams, "seconds must be more than 0 and at most %d", protocol.MaxHoldSeconds)
	}
	release, err := s.cfg.Driver.KeyDown(ctx, key, mods)
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if rerr := release(rctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	return sleep(ctx, p.Seconds)
}

// sleep waits seconds, or until ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, seconds float64) error {
	t := time.NewTimer(time.Duration(seconds * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// onScreen refuses a point outside the guest screen, naming the screen size.
func (s *Server) onScreen(x, y float64) error {
	scr := s.cfg.Driver.Screen()
	if !(x >= 0 && y >= 0 && x < float64(scr.Width) && y < float64(scr.Height)) {
		return protocol.Errorf(protocol.CodeInvalidParams, "point (%g, %g) is outside the %dx%d screen", x, y, scr.Width, scr.Height)
	}
	return nil
}
