// console_darwin_arm64.m: the VM's own screen and keyboard for an
// unattended Setup Assistant. The Virtualization framework serves a VM's
// framebuffer, keyboard and pointer over RFB with the private class
// _VZVNCServer (tart's --vnc-experimental and lume use it; it has no
// public replacement). It is looked up at run time: a macOS without it
// fails with a clear error, not at link or load time. The server listens
// on every interface of the Mac, behind a random password, and only while
// the unattended setup runs.

#import <Foundation/Foundation.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "console_darwin_arm64.h"

// The private interface, as tart and lume call it (only messages are
// sent; no symbol is linked).
@interface HCVNCServer : NSObject
- (instancetype)initWithPort:(unsigned short)port
                       queue:(dispatch_queue_t)queue
       securityConfiguration:(id)configuration;
@property(nonatomic, readonly) unsigned short port;
@property(nonatomic, strong) id virtualMachine;
- (void)start;
- (void)stop;
@end

@interface HCVNCAuthentication : NSObject
- (instancetype)initWithPassword:(NSString *)password;
@end

// hc_on_main runs block on the main queue (where the helper's VMs and
// windows live) and waits up to seconds for it.
static BOOL hc_on_main(void (^block)(void), int64_t seconds) {
	if ([NSThread isMainThread]) {
		block();
		return YES;
	}
	dispatch_semaphore_t done = dispatch_semaphore_create(0);
	dispatch_async(dispatch_get_main_queue(), ^{
		block();
		dispatch_semaphore_signal(done);
	});
	return dispatch_semaphore_wait(done, dispatch_time(DISPATCH_TIME_NOW, seconds * NSEC_PER_SEC)) == 0;
}

char *hc_console_start(void *vm, const char *password, void **server, int *port) {
	Class serverClass = NSClassFromString(@"_VZVNCServer");
	Class authClass = NSClassFromString(@"_VZVNCAuthenticationSecurityConfiguration");
	if (serverClass == nil || authClass == nil) {
		return strdup("this macOS's Virtualization framework has no VNC server (_VZVNCServer)");
	}
	NSString *secret = [NSString stringWithUTF8String:password];
	if (secret == nil) return strdup("the console password is not UTF-8");
	id machine = (__bridge id)vm;
	__block HCVNCServer *started = nil;
	BOOL ran = hc_on_main(^{
		HCVNCAuthentication *auth = [(HCVNCAuthentication *)[authClass alloc] initWithPassword:secret];
		HCVNCServer *s = [(HCVNCServer *)[serverClass alloc] initWithPort:0 queue:dispatch_get_main_queue() securityConfiguration:auth];
		if (s == nil) return;
		s.virtualMachine = machine;
		[s start];
		started = s;
	}, 10);
	if (!ran) return strdup("the main queue did not start the VM's console within 10 s");
	if (started == nil) return strdup("the Virtualization framework made no VNC server");
	// Port 0 asks for a free port: the server knows it once it listens.
	for (int i = 0; i < 100; i++) {
		__block unsigned short p = 0;
		hc_on_main(^{ p = started.port; }, 2);
		if (p != 0) {
			*port = p;
			*server = (void *)CFBridgingRetain(started);
			return NULL;
		}
		usleep(100000);
	}
	hc_on_main(^{ [started stop]; }, 5);
	return strdup("the VM's console did not listen within 10 s");
}

void hc_console_stop(void *server) {
	if (server == NULL) return;
	HCVNCServer *s = CFBridgingRelease(server);
	hc_on_main(^{
		[s stop];
		s.virtualMachine = nil;
	}, 5);
}
