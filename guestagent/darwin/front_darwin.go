package darwin

/*
#include <stdlib.h>
#include "bridge_darwin.h"
*/
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// frontmostApp returns the frontmost app's pid and name.
func frontmostApp() (int32, string) {
	var name *C.char
	pid := C.hc_frontmost_pid(&name)
	defer C.free(unsafe.Pointer(name))
	return int32(pid), C.GoString(name)
}

// activationWays are the ways tried, in order, when an open with
// activation left its app behind (front.go).
var activationWays = []activation{
	{name: "cooperative activation", try: func(pid int32) error {
		if rc := C.hc_activate_cooperative(C.int32_t(pid)); rc != 0 {
			return fmt.Errorf("refused: %d", int(rc))
		}
		return nil
	}},
	{name: "Accessibility's AXFrontmost", try: func(pid int32) error {
		if rc := C.hc_activate_ax(C.int32_t(pid)); rc != 0 {
			return fmt.Errorf("AXError %d", int(rc))
		}
		return nil
	}},
}

// broughtForward checks that the app an open started or reused (pid; -1
// when macOS did not say) came to the front, trying the other ways if it
// did not, and keeps the outcome for health_check.
func (d *Driver) broughtForward(ctx context.Context, what string, pid C.int32_t) error {
	if pid < 0 {
		return nil
	}
	r := bringToFront(ctx, what, int32(pid), frontmostApp, activationWays, defaultFrontTiming)
	d.front.record(r, time.Now())
	if err := r.err(); err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "%s", err.Error())
	}
	return nil
}
