// vsock_darwin_arm64.m: a connection to the guest agent's virtio socket
// port. vz v3.7.1's Connect closes the descriptor the
// VZVirtioSocketConnection owns, which the connection closes again when
// it goes (vsock.go says more); here Go duplicates the descriptor in the
// completion handler, while the connection is alive, and the connection
// then closes its own, once. ARC.

#import <Foundation/Foundation.h>
#import <Virtualization/Virtualization.h>

#include "vsock_darwin_arm64.h"
#include "_cgo_export.h"

void hc_vsock_connect(void *device, void *queue, uint32_t port, uintptr_t handle) {
	// Strong references: the block keeps the device and queue until it
	// has run, whatever the Go side has let go of by then.
	VZVirtioSocketDevice *dev = (__bridge VZVirtioSocketDevice *)device;
	dispatch_queue_t q = (__bridge dispatch_queue_t)queue;
	// The VM and its devices are used on the VM's queue only.
	dispatch_async(q, ^{
		[dev connectToPort:port
		    completionHandler:^(VZVirtioSocketConnection *connection, NSError *error) {
			    if (connection == nil) {
				    NSString *why = error.localizedDescription ?: @"the guest did not accept the connection";
				    hcVsockConnected(handle, -1, (char *)(why.UTF8String ?: "the guest did not accept the connection"));
				    return;
			    }
			    hcVsockConnected(handle, connection.fileDescriptor, NULL);
			    [connection close];
		    }];
	});
}
