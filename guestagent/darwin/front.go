package darwin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Bringing an app to the front from the guest agent. Since macOS 14 an
// app is activated only when the active app yields to it (cooperative
// activation), and the agent is a background process that is never
// active: an open with activation (NSWorkspaceOpenConfiguration.activates)
// of an app that is already running may leave it behind the app in
// front. So the driver checks that the app it opened is frontmost, and
// if it is not tries the other ways in order, checking after each:
// cooperative activation as if from the app in front
// (activateFromApplication:options:, macOS 14) and then Accessibility's
// AXFrontmost, which the agent's Accessibility permission allows. When
// none takes, open_app says so and health_check reports it (frontState).

// activation is one way to bring the app with pid to the front.
type activation struct {
	name string
	try  func(pid int32) error
}

// frontTiming is how long to wait for an activation to show, and how often
// to look.
type frontTiming struct {
	wait, poll time.Duration
}

// defaultFrontTiming: an activation shows within a few frames; an app
// that is launching takes longer to come forward after its open.
var defaultFrontTiming = frontTiming{wait: 1500 * time.Millisecond, poll: 50 * time.Millisecond}

// frontResult is what bringToFront found.
type frontResult struct {
	App   string // the app's name
	Way   string // the way that took ("" when none did)
	Front string // the app in front when none did
	Tried []string
}

// bringToFront waits for the app with pid (which an open with activation
// just asked for) to be frontmost, and if it is not tries ways in order,
// waiting after each. frontmost returns the frontmost app's pid and name.
func bringToFront(ctx context.Context, app string, pid int32, frontmost func() (int32, string), ways []activation, t frontTiming) frontResult {
	res := frontResult{App: app}
	took := func() bool {
		deadline := time.Now().Add(t.wait)
		for {
			p, name := frontmost()
			if p == pid {
				return true
			}
			res.Front = name
			if time.Now().After(deadline) || ctx.Err() != nil {
				return false
			}
			select {
			case <-ctx.Done():
				return false
			case <-time.After(t.poll):
			}
		}
	}
	res.Tried = append(res.Tried, "open with activation")
	if took() {
		res.Way = "open with activation"
		return res
	}
	for _, w := range ways {
		res.Tried = append(res.Tried, w.name)
		if err := w.try(pid); err != nil {
			res.Tried[len(res.Tried)-1] += " (" + err.Error() + ")"
			continue
		}
		if took() {
			res.Way = w.name
			return res
		}
	}
	return res
}

// err is the error open_app answers when the app did not come forward.
func (r frontResult) err() error {
	if r.Way != "" {
		return nil
	}
	return fmt.Errorf("%s is open but macOS kept it behind %s: it refused to bring it to the front from the background (tried %s); click one of its windows or its Dock icon",
		r.App, orUnknown(r.Front), strings.Join(r.Tried, ", "))
}

func orUnknown(s string) string {
	if s == "" {
		return "another app"
	}
	return s
}

// frontState remembers the last activation that did not take, for
// health_check, until one takes.
type frontState struct {
	// mu guards failed and at.
	mu     sync.Mutex
	failed *frontResult
	at     time.Time
}

// record keeps r's outcome at now.
func (s *frontState) record(r frontResult, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Way != "" {
		s.failed = nil
		return
	}
	s.failed, s.at = &r, now
}

// problem is health_check's line about activation, or "" when the last
// open brought its app to the front.
func (s *frontState) problem() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		return ""
	}
	return fmt.Sprintf("apps do not come to the front: at %s macOS kept %s behind %s (tried %s); the agent's opens may land behind other windows",
		s.at.Format("15:04:05"), s.failed.App, orUnknown(s.failed.Front), strings.Join(s.failed.Tried, ", "))
}
