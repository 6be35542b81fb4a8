package darwin

/*
#include <stdlib.h>
#include "bridge_darwin.h"
*/
import "C"

import (
	"context"
	"errors"
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/hivecrew/hivecrew/guestagent/settle"
)

// streamFrames is the macOS source of redraws for the capture's settle: a
// ScreenCaptureKit stream of the main display (frames_darwin.m) whose
// complete frames are the redraws.
type streamFrames struct {
	// mu guards handle and token.
	mu     sync.Mutex
	handle unsafe.Pointer
	token  cgo.Handle
}

var _ settle.FrameSource = (*streamFrames)(nil)

// frameReports are what one run of the stream reports to.
type frameReports struct {
	drawn func()
	lost  func(error)
}

// Start implements settle.FrameSource. It needs the Screen Recording
// permission; without it the stream does not start (the settle then
// counts only the time since input).
func (f *streamFrames) Start(ctx context.Context, drawn func(), lost func(error)) error {
	f.Stop() // a run that stopped by itself (lost) is let go of here
	if C.hc_screen_capture_allowed() == 0 {
		return errors.New("no Screen Recording permission")
	}
	token := cgo.NewHandle(&frameReports{drawn: drawn, lost: lost})
	var handle unsafe.Pointer
	if msg := C.hc_frames_start(C.uintptr_t(token), &handle); msg != nil {
		token.Delete()
		defer C.free(unsafe.Pointer(msg))
		return errors.New("start the capture stream: " + C.GoString(msg))
	}
	f.mu.Lock()
	f.handle, f.token = handle, token
	f.mu.Unlock()
	return nil
}

// Stop implements settle.FrameSource: no report comes after it returns,
// so the run's handle can go.
func (f *streamFrames) Stop() {
	f.mu.Lock()
	handle, token := f.handle, f.token
	f.handle, f.token = nil, 0
	f.mu.Unlock()
	if handle == nil {
		return
	}
	C.hc_frames_stop(handle)
	token.Delete()
}

//export hcFramesDrawn
func hcFramesDrawn(token C.uintptr_t) {
	cgo.Handle(token).Value().(*frameReports).drawn()
}

//export hcFramesLost
func hcFramesLost(token C.uintptr_t, msg *C.char) {
	cgo.Handle(token).Value().(*frameReports).lost(errors.New(C.GoString(msg)))
}
