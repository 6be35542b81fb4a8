package vz

/*
#cgo CFLAGS: -x objective-c -fobjc-arc -mmacosx-version-min=15.0
#cgo LDFLAGS: -framework Foundation -framework Virtualization
#include "vsock_darwin_arm64.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"runtime"
	"runtime/cgo"
	"unsafe"

	codehex "github.com/Code-Hex/vz/v3"

	"github.com/hivecrew/hivecrew/core/vm"
)

// vsockConnected is what a connection attempt's completion handler hands
// back: the connection's descriptor (-1 on failure) and why it failed.
type vsockConnected func(fd int, err error)

//export hcVsockConnected
func hcVsockConnected(h C.uintptr_t, fd C.int, why *C.char) {
	handle := cgo.Handle(h)
	done, ok := handle.Value().(vsockConnected)
	handle.Delete()
	if !ok {
		return
	}
	if fd < 0 {
		done(-1, errors.New(C.GoString(why)))
		return
	}
	done(int(fd), nil)
}

// dialVsock connects to port on dev through the framework, not vz's
// Connect (adoptDescriptor says why). The descriptor is duplicated in the
// completion handler, which runs on the VM's queue; a connection that
// arrives after ctx ended is closed (vm.DialContext). If the guest does
// not listen, the framework may never call back: ctx bounds the wait.
func dialVsock(ctx context.Context, dev *codehex.VirtioSocketDevice, port uint32) (net.Conn, error) {
	obj, queue, err := vzDevice(dev)
	if err != nil {
		return nil, err
	}
	conn, err := vm.DialContext(ctx, func() (net.Conn, error) {
		type result struct {
			conn net.Conn
			err  error
		}
		res := make(chan result, 1)
		h := cgo.NewHandle(vsockConnected(func(fd int, err error) {
			if err != nil {
				res <- result{nil, err}
				return
			}
			c, err := adoptDescriptor(fd)
			res <- result{c, err}
		}))
		C.hc_vsock_connect(obj, queue, C.uint32_t(port), C.uintptr_t(h))
		r := <-res
		return r.conn, r.err
	})
	runtime.KeepAlive(dev)
	return conn, err
}

// vzDevice returns the VZVirtioSocketDevice behind dev and its VM's
// dispatch queue: vz v3.7.1's VirtioSocketDevice holds them unexported
// (fields "pointer", an embedded *objc.Pointer, and "dispatchQueue"),
// read here as vzObject reads the VM's (pinned in go.mod: re-check when
// upgrading).
func vzDevice(dev *codehex.VirtioSocketDevice) (obj, queue unsafe.Pointer, err error) {
	if dev == nil {
		return nil, nil, errors.New("vz: no socket device")
	}
	v := reflect.ValueOf(dev).Elem()
	p, q := v.FieldByName("pointer"), v.FieldByName("dispatchQueue")
	if !p.IsValid() || p.Kind() != reflect.Pointer || p.IsNil() || !q.IsValid() || q.Kind() != reflect.UnsafePointer {
		return nil, nil, fmt.Errorf("vz: VirtioSocketDevice's layout changed (%s): update vsock_darwin_arm64.go", v.Type())
	}
	obj = *(*unsafe.Pointer)(unsafe.Pointer(p.Pointer()))
	queue = q.UnsafePointer()
	if obj == nil || queue == nil {
		return nil, nil, errors.New("vz: the socket device or its queue is nil")
	}
	return obj, queue, nil
}
