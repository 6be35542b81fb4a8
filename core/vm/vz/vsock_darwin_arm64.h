// vsock_darwin_arm64.h: connecting to the guest's virtio socket without
// vz's Connect (vsock_darwin_arm64.m; see adoptDescriptor in vsock.go).
#ifndef HIVECREW_VSOCK_H
#define HIVECREW_VSOCK_H

#include <stdint.h>

// hc_vsock_connect asks device (a VZVirtioSocketDevice) on queue (its
// VM's dispatch queue) for a connection to port, and calls
// hcVsockConnected(handle, fd, NULL) with the connection's descriptor
// while the connection is alive, then closes the connection (its own
// descriptor, once); on failure hcVsockConnected(handle, -1, why).
void hc_vsock_connect(void *device, void *queue, uint32_t port, uintptr_t handle);

#endif
