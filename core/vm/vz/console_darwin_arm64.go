package vz

/*
#cgo CFLAGS: -x objective-c -fobjc-arc
#cgo LDFLAGS: -framework Foundation -framework Virtualization
#include <stdlib.h>
#include "console_darwin_arm64.h"
*/
import "C"

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"unsafe"

	"github.com/hivecrew/hivecrew/core/vm"
)

var _ vm.Consoler = (*Machine)(nil)

// OpenConsole implements vm.Consoler with the Virtualization framework's
// own VNC server (console_darwin_arm64.m) and a random 8-character
// password (VNC authentication reads 8).
func (m *Machine) OpenConsole(ctx context.Context) (string, string, func(), error) {
	m.mu.Lock()
	v := m.v
	m.mu.Unlock()
	if v == nil {
		return "", "", nil, vm.ErrNotRunning
	}
	ptr, err := vzObject(v)
	if err != nil {
		return "", "", nil, err
	}
	password := rand.Text()[:8]
	cpass := C.CString(password)
	defer C.free(unsafe.Pointer(cpass))
	var server unsafe.Pointer
	var port C.int
	if msg := C.hc_console_start(ptr, cpass, &server, &port); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return "", "", nil, fmt.Errorf("open the console of VM %s: %w", m.spec.ID, errors.New(C.GoString(msg)))
	}
	var once sync.Once
	stop := func() { once.Do(func() { C.hc_console_stop(server) }) }
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), password, stop, nil
}
