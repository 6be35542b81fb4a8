// bridge_darwin.m: the Objective-C side of the macOS guest driver. Thin by
// design: each function does one system call sequence; decisions live in Go.
// Deployment target macOS 15 (ScreenCaptureKit's SCScreenshotManager).

#import <AppKit/AppKit.h>
#import <Carbon/Carbon.h>
#import <ApplicationServices/ApplicationServices.h>
#import <CoreGraphics/CoreGraphics.h>
#import <Foundation/Foundation.h>
#import <ScreenCaptureKit/ScreenCaptureKit.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bridge_darwin.h"

static const int64_t hc_wait_seconds = 10;

// hc_bytes copies data into a malloc'd, NUL-terminated string (NULL when
// out of memory).
static char *hc_bytes(NSData *data) {
	char *out = malloc(data.length + 1);
	if (out == NULL) return NULL;
	memcpy(out, data.bytes, data.length);
	out[data.length] = 0;
	return out;
}

// hc_cstring returns s as malloc'd UTF-8. UTF8String is NULL for a string
// that holds a lone UTF-16 surrogate (a clipboard or a window title can),
// and strdup(NULL) crashes: such a string is converted lossily instead.
static char *hc_cstring(NSString *s) {
	if (s == nil) return strdup("");
	const char *utf8 = s.UTF8String;
	if (utf8 != NULL) return strdup(utf8);
	NSData *lossy = [s dataUsingEncoding:NSUTF8StringEncoding allowLossyConversion:YES];
	if (lossy == nil) return strdup("");
	char *out = hc_bytes(lossy);
	return out != NULL ? out : strdup("");
}

// hc_nsstring is s as an NSString: stringWithUTF8String: returns nil for
// bytes that are not UTF-8 (and raises for NULL), and nil then raises in
// fileURLWithPath: or setString:forType:. Such bytes give "".
static NSString *hc_nsstring(const char *s) {
	NSString *str = s != NULL ? [NSString stringWithUTF8String:s] : nil;
	return str != nil ? str : @"";
}

// hc_json serialises object, or returns NULL. NSJSONSerialization raises
// (it does not return an error) for an object it cannot write, such as a
// NaN or infinite number in an accessibility frame: isValidJSONObject
// checks first.
static char *hc_json(id object) {
	if (![NSJSONSerialization isValidJSONObject:object]) return NULL;
	NSData *data = [NSJSONSerialization dataWithJSONObject:object options:0 error:nil];
	if (data == nil) return NULL;
	return hc_bytes(data);
}

// hc_number is a JSON-safe number: NaN and infinities become 0.
static NSNumber *hc_number(double v) { return @(isfinite(v) ? v : 0); }

// ---- Display and permissions

hc_screen hc_main_screen(void) {
	hc_screen out = {0, 0, 1};
	CGDirectDisplayID display = CGMainDisplayID();
	CGRect bounds = CGDisplayBounds(display); // points, origin top-left
	out.width = bounds.size.width;
	out.height = bounds.size.height;
	CGDisplayModeRef mode = CGDisplayCopyDisplayMode(display);
	if (mode != NULL) {
		size_t points = CGDisplayModeGetWidth(mode);
		if (points > 0) out.scale = (double)CGDisplayModeGetPixelWidth(mode) / (double)points;
		CGDisplayModeRelease(mode);
	}
	return out;
}

int hc_accessibility_trusted(void) { return AXIsProcessTrusted() ? 1 : 0; }

int hc_screen_capture_allowed(void) { return CGPreflightScreenCaptureAccess() ? 1 : 0; }

void hc_request_permissions(void) {
	CGRequestScreenCaptureAccess();
	NSDictionary *options = @{(__bridge NSString *)kAXTrustedCheckOptionPrompt : @YES};
	AXIsProcessTrustedWithOptions((__bridge CFDictionaryRef)options);
}

// ---- Screenshot

// A capture's result passes from the completion handler to the waiting
// caller through state: the first of them to move it from waiting claims
// it. A handler that comes after the caller timed out frees what it made;
// before, every late capture leaked its pixel buffer.
enum { HC_CAPTURE_WAITING = 0, HC_CAPTURE_DELIVERED = 1, HC_CAPTURE_ABANDONED = 2 };

hc_image hc_capture(void) {
	__block hc_image out = {0};
	__block atomic_int state = HC_CAPTURE_WAITING;
	dispatch_semaphore_t done = dispatch_semaphore_create(0);
	void (^deliver)(hc_image) = ^(hc_image result) {
		int waiting = HC_CAPTURE_WAITING;
		if (atomic_compare_exchange_strong(&state, &waiting, HC_CAPTURE_DELIVERED)) {
			out = result;
			dispatch_semaphore_signal(done);
			return;
		}
		free(result.pixels); // the caller gave up waiting
		free(result.err);
	};
	[SCShareableContent getShareableContentExcludingDesktopWindows:NO
	                                           onScreenWindowsOnly:YES
	                                             completionHandler:^(SCShareableContent *content, NSError *error) {
		if (error != nil || content.displays.count == 0) {
			hc_image failed = {0};
			failed.err = hc_cstring(error != nil ? error.localizedDescription : @"no display to capture");
			deliver(failed);
			return;
		}
		SCDisplay *display = content.displays.firstObject;
		for (SCDisplay *d in content.displays) {
			if (d.displayID == CGMainDisplayID()) display = d;
		}
		SCContentFilter *filter = [[SCContentFilter alloc] initWithDisplay:display excludingWindows:@[]];
		SCStreamConfiguration *config = [[SCStreamConfiguration alloc] init];
		config.width = (size_t)(display.width * filter.pointPixelScale);
		config.height = (size_t)(display.height * filter.pointPixelScale);
		config.showsCursor = YES;
		config.pixelFormat = kCVPixelFormatType_32BGRA;
		[SCScreenshotManager captureImageWithFilter:filter
		                              configuration:config
		                          completionHandler:^(CGImageRef image, NSError *captureError) {
			hc_image result = {0};
			if (captureError != nil || image == NULL) {
				result.err = hc_cstring(captureError != nil ? captureError.localizedDescription : @"no image");
				deliver(result);
				return;
			}
			size_t w = CGImageGetWidth(image), h = CGImageGetHeight(image);
			unsigned char *pixels = calloc(w * h, 4);
			CGColorSpaceRef space = CGColorSpaceCreateWithName(kCGColorSpaceSRGB);
			CGContextRef ctx = pixels != NULL && space != NULL
			                       ? CGBitmapContextCreate(pixels, w, h, 8, w * 4, space,
			                                               kCGImageAlphaPremultipliedLast | kCGBitmapByteOrder32Big)
			                       : NULL;
			if (ctx == NULL) {
				free(pixels);
				if (space != NULL) CGColorSpaceRelease(space);
				result.err = strdup("could not allocate the screenshot's bitmap");
				deliver(result);
				return;
			}
			CGContextDrawImage(ctx, CGRectMake(0, 0, w, h), image);
			CGContextRelease(ctx);
			CGColorSpaceRelease(space);
			result.pixels = pixels;
			result.width = (int)w;
			result.height = (int)h;
			deliver(result);
		}];
	}];
	if (dispatch_semaphore_wait(done, dispatch_time(DISPATCH_TIME_NOW, hc_wait_seconds * NSEC_PER_SEC)) != 0) {
		int waiting = HC_CAPTURE_WAITING;
		if (atomic_compare_exchange_strong(&state, &waiting, HC_CAPTURE_ABANDONED)) {
			hc_image late = {0};
			late.err = strdup("screen capture timed out");
			return late;
		}
		// Delivered between the timeout and now: the signal is coming.
		dispatch_semaphore_wait(done, DISPATCH_TIME_FOREVER);
	}
	return out;
}

// ---- Input (global display coordinates in points, origin top-left)

static void hc_post(CGEventRef event) {
	if (event == NULL) return;
	CGEventPost(kCGHIDEventTap, event);
	CFRelease(event);
}

void hc_mouse_move(double x, double y) {
	hc_post(CGEventCreateMouseEvent(NULL, kCGEventMouseMoved, CGPointMake(x, y), kCGMouseButtonLeft));
}

// hc_button_events gives a button's down, up and dragged event types and
// its CGMouseButton.
static CGMouseButton hc_button_events(int button, CGEventType *down, CGEventType *up, CGEventType *dragged) {
	if (button == 1) {
		*down = kCGEventRightMouseDown;
		*up = kCGEventRightMouseUp;
		*dragged = kCGEventRightMouseDragged;
		return kCGMouseButtonRight;
	}
	if (button == 2) {
		*down = kCGEventOtherMouseDown;
		*up = kCGEventOtherMouseUp;
		*dragged = kCGEventOtherMouseDragged;
		return kCGMouseButtonCenter;
	}
	*down = kCGEventLeftMouseDown;
	*up = kCGEventLeftMouseUp;
	*dragged = kCGEventLeftMouseDragged;
	return kCGMouseButtonLeft;
}

// hc_post_mouse makes and posts a mouse event with a click state and
// flags (0: the event's own).
static int hc_post_mouse(CGEventType type, CGPoint at, CGMouseButton which, int click_state, uint64_t flags) {
	CGEventRef e = CGEventCreateMouseEvent(NULL, type, at, which);
	if (e == NULL) return -1;
	if (click_state > 0) CGEventSetIntegerValueField(e, kCGMouseEventClickState, click_state);
	if (flags != 0) CGEventSetFlags(e, (CGEventFlags)flags);
	CGEventPost(kCGHIDEventTap, e);
	CFRelease(e);
	return 0;
}

int hc_mouse_move_drag(double x, double y, int button) {
	if (button < 0) return hc_post_mouse(kCGEventMouseMoved, CGPointMake(x, y), kCGMouseButtonLeft, 0, 0);
	CGEventType down, up, dragged;
	CGMouseButton which = hc_button_events(button, &down, &up, &dragged);
	return hc_post_mouse(dragged, CGPointMake(x, y), which, 0, 0);
}

int hc_mouse_click(double x, double y, int button, int count, uint64_t flags) {
	CGEventType down, up, dragged;
	CGMouseButton which = hc_button_events(button, &down, &up, &dragged);
	CGPoint at = CGPointMake(x, y);
	if (hc_post_mouse(kCGEventMouseMoved, at, kCGMouseButtonLeft, 0, flags) != 0) return -1;
	for (int i = 1; i <= count; i++) {
		if (hc_post_mouse(down, at, which, i, flags) != 0) return -1;
		if (hc_post_mouse(up, at, which, i, flags) != 0) return -1;
	}
	return 0;
}

int hc_cursor_position(double *x, double *y) {
	CGEventRef e = CGEventCreate(NULL); // an event of now: its location is the pointer's
	if (e == NULL) return -1;
	CGPoint at = CGEventGetLocation(e); // global display coordinates, points, origin top-left
	CFRelease(e);
	*x = at.x;
	*y = at.y;
	return 0;
}

int hc_mouse_button(int button, int down) {
	double x, y;
	if (hc_cursor_position(&x, &y) != 0) return -1;
	CGEventType down_type, up_type, dragged;
	CGMouseButton which = hc_button_events(button, &down_type, &up_type, &dragged);
	return hc_post_mouse(down ? down_type : up_type, CGPointMake(x, y), which, 1, 0);
}

void hc_mouse_drag(double fx, double fy, double tx, double ty, int steps) {
	hc_mouse_move(fx, fy);
	hc_post(CGEventCreateMouseEvent(NULL, kCGEventLeftMouseDown, CGPointMake(fx, fy), kCGMouseButtonLeft));
	for (int i = 1; i <= steps; i++) {
		double f = (double)i / (double)steps;
		CGPoint p = CGPointMake(fx + (tx - fx) * f, fy + (ty - fy) * f);
		hc_post(CGEventCreateMouseEvent(NULL, kCGEventLeftMouseDragged, p, kCGMouseButtonLeft));
		usleep(5000);
	}
	hc_post(CGEventCreateMouseEvent(NULL, kCGEventLeftMouseUp, CGPointMake(tx, ty), kCGMouseButtonLeft));
}

int hc_scroll(double x, double y, int dx, int dy, uint64_t flags) {
	hc_mouse_move(x, y);
	// macOS wheel values are positive upwards and leftwards; the protocol's
	// positive deltas scroll down and right.
	CGEventRef e = CGEventCreateScrollWheelEvent(NULL, kCGScrollEventUnitLine, 2, -dy, -dx);
	if (e == NULL) return -1;
	if (flags != 0) CGEventSetFlags(e, (CGEventFlags)flags);
	CGEventPost(kCGHIDEventTap, e);
	CFRelease(e);
	return 0;
}

void hc_key(uint16_t code, uint64_t flags) {
	CGEventRef e = CGEventCreateKeyboardEvent(NULL, (CGKeyCode)code, true);
	CGEventSetFlags(e, (CGEventFlags)flags);
	hc_post(e);
	e = CGEventCreateKeyboardEvent(NULL, (CGKeyCode)code, false);
	CGEventSetFlags(e, (CGEventFlags)flags);
	hc_post(e);
}

int hc_key_event(uint16_t code, int down, uint64_t flags) {
	// For a modifier's key code CGEventCreateKeyboardEvent makes a
	// flags-changed event; the flags say which modifiers are down after it.
	CGEventRef e = CGEventCreateKeyboardEvent(NULL, (CGKeyCode)code, down != 0);
	if (e == NULL) return -1;
	CGEventSetFlags(e, (CGEventFlags)flags);
	CGEventPost(kCGHIDEventTap, e);
	CFRelease(e);
	return 0;
}

int hc_type_key(uint16_t code, uint64_t flags, const uint16_t *units, int n) {
	for (int down = 1; down >= 0; down--) {
		CGEventRef e = CGEventCreateKeyboardEvent(NULL, (CGKeyCode)code, down == 1);
		if (e == NULL) return -1;
		CGEventSetFlags(e, (CGEventFlags)flags);
		if (n > 0) CGEventKeyboardSetUnicodeString(e, (UniCharCount)n, (const UniChar *)units);
		CGEventPost(kCGHIDEventTap, e);
		CFRelease(e);
	}
	return 0;
}

// ---- The keyboard layout

// hc_layout is what hc_layout_fill reads, in memory of its own: a reader
// that timed out leaves it to the block that fills it.
typedef struct {
	uint16_t chars[HC_LAYOUT_KEYS * 2 * HC_LAYOUT_UNITS];
	int8_t lens[HC_LAYOUT_KEYS * 2];
	int rc;
} hc_layout;

// hc_layout_fill runs on the main thread: TextInputSources is not thread
// safe, and an application with a run loop must call it there.
static void hc_layout_fill(hc_layout *out) {
	TISInputSourceRef source = TISCopyCurrentKeyboardLayoutInputSource();
	if (source == NULL) {
		out->rc = -1;
		return;
	}
	// A 'KCHR'-only layout has no 'uchr' data (NULL); the data belongs to
	// the source (a Get, not a Copy).
	CFDataRef data = (CFDataRef)TISGetInputSourceProperty(source, kTISPropertyUnicodeKeyLayoutData);
	if (data == NULL) {
		CFRelease(source);
		out->rc = -1;
		return;
	}
	const UCKeyboardLayout *layout = (const UCKeyboardLayout *)CFDataGetBytePtr(data);
	UInt32 kbd = LMGetKbdType();
	for (int code = 0; code < HC_LAYOUT_KEYS; code++) {
		for (int shift = 0; shift < 2; shift++) {
			int i = code * 2 + shift;
			UInt32 dead = 0;
			UniCharCount n = 0;
			UInt32 mods = shift ? ((shiftKey >> 8) & 0xFF) : 0;
			OSStatus st = UCKeyTranslate(layout, (UInt16)code, kUCKeyActionDown, mods, kbd, 0, &dead, HC_LAYOUT_UNITS, &n,
			                             (UniChar *)&out->chars[i * HC_LAYOUT_UNITS]);
			if (st != noErr) {
				out->lens[i] = 0;
			} else if (dead != 0) {
				out->lens[i] = -1; // a dead key: it types with the next key
			} else {
				out->lens[i] = (int8_t)(n > HC_LAYOUT_UNITS ? HC_LAYOUT_UNITS : n);
			}
		}
	}
	CFRelease(source);
	out->rc = 0;
}

int hc_layout_chars(uint16_t *chars, int8_t *lens) {
	hc_layout *layout = calloc(1, sizeof(hc_layout));
	if (layout == NULL) return -1;
	if ([NSThread isMainThread]) {
		hc_layout_fill(layout);
	} else {
		// The claim decides who frees layout: the block after a reader
		// that gave up, the reader otherwise.
		__block atomic_int state = HC_CAPTURE_WAITING;
		dispatch_semaphore_t done = dispatch_semaphore_create(0);
		dispatch_async(dispatch_get_main_queue(), ^{
			hc_layout_fill(layout);
			int waiting = HC_CAPTURE_WAITING;
			if (atomic_compare_exchange_strong(&state, &waiting, HC_CAPTURE_DELIVERED)) {
				dispatch_semaphore_signal(done);
			} else {
				free(layout);
			}
		});
		if (dispatch_semaphore_wait(done, dispatch_time(DISPATCH_TIME_NOW, 2 * NSEC_PER_SEC)) != 0) {
			int waiting = HC_CAPTURE_WAITING;
			if (atomic_compare_exchange_strong(&state, &waiting, HC_CAPTURE_ABANDONED)) return -2;
			dispatch_semaphore_wait(done, DISPATCH_TIME_FOREVER);
		}
	}
	int rc = layout->rc;
	if (rc == 0) {
		memcpy(chars, layout->chars, sizeof(layout->chars));
		memcpy(lens, layout->lens, sizeof(layout->lens));
	}
	free(layout);
	return rc;
}

// ---- Apps, files and URLs

// hc_app_url finds an app by bundle id, or by name in the usual folders.
static NSURL *hc_app_url(NSString *name) {
	NSURL *url = [[NSWorkspace sharedWorkspace] URLForApplicationWithBundleIdentifier:name];
	if (url != nil) return url;
	NSString *bare = [name hasSuffix:@".app"] ? [name stringByDeletingPathExtension] : name;
	NSArray<NSString *> *dirs = @[
		@"/Applications", @"/System/Applications", @"/System/Applications/Utilities",
		@"/Applications/Utilities", [NSHomeDirectory() stringByAppendingPathComponent:@"Applications"]
	];
	NSFileManager *fm = [NSFileManager defaultManager];
	for (NSString *dir in dirs) {
		for (NSString *item in [fm contentsOfDirectoryAtPath:dir error:nil]) {
			if ([item.pathExtension isEqualToString:@"app"] &&
			    [[item stringByDeletingPathExtension] caseInsensitiveCompare:bare] == NSOrderedSame) {
				return [NSURL fileURLWithPath:[dir stringByAppendingPathComponent:item]];
			}
		}
	}
	return nil;
}

// hc_wait runs an asynchronous NSWorkspace call and waits for its
// completion, which names the app that opened (its pid, or -1).
static int hc_wait(void (^start)(void (^finish)(NSRunningApplication *, NSError *)), int32_t *pid, char **err) {
	__block NSError *failure = nil;
	__block int32_t opened = -1;
	dispatch_semaphore_t done = dispatch_semaphore_create(0);
	start(^(NSRunningApplication *a, NSError *e) {
		failure = e;
		if (a != nil) opened = a.processIdentifier;
		dispatch_semaphore_signal(done);
	});
	if (dispatch_semaphore_wait(done, dispatch_time(DISPATCH_TIME_NOW, hc_wait_seconds * NSEC_PER_SEC)) != 0) {
		*err = strdup("timed out waiting for the app to open");
		return HC_FAILED;
	}
	if (failure != nil) {
		*err = hc_cstring(failure.localizedDescription);
		return HC_FAILED;
	}
	*pid = opened;
	return HC_OK;
}

int hc_open_app(const char *name, int32_t *pid, char **err) {
	NSURL *app = hc_app_url(hc_nsstring(name));
	if (app == nil) return HC_NOT_FOUND;
	NSWorkspaceOpenConfiguration *config = [NSWorkspaceOpenConfiguration configuration];
	config.activates = YES;
	return hc_wait(^(void (^finish)(NSRunningApplication *, NSError *)) {
		[[NSWorkspace sharedWorkspace] openApplicationAtURL:app configuration:config completionHandler:finish];
	}, pid, err);
}

static int hc_open(NSURL *target, const char *app, int32_t *pid, char **err) {
	NSWorkspaceOpenConfiguration *config = [NSWorkspaceOpenConfiguration configuration];
	config.activates = YES;
	if (app != NULL && app[0] != 0) {
		NSURL *appURL = hc_app_url(hc_nsstring(app));
		if (appURL == nil) return HC_NOT_FOUND;
		return hc_wait(^(void (^finish)(NSRunningApplication *, NSError *)) {
			[[NSWorkspace sharedWorkspace] openURLs:@[ target ] withApplicationAtURL:appURL configuration:config completionHandler:finish];
		}, pid, err);
	}
	return hc_wait(^(void (^finish)(NSRunningApplication *, NSError *)) {
		[[NSWorkspace sharedWorkspace] openURL:target configuration:config completionHandler:finish];
	}, pid, err);
}

int hc_open_file(const char *path, const char *app, int32_t *pid, char **err) {
	NSString *p = hc_nsstring(path);
	if (p.length == 0) {
		*err = strdup("the path is empty or not UTF-8");
		return HC_FAILED;
	}
	return hc_open([NSURL fileURLWithPath:p], app, pid, err);
}

int hc_open_url(const char *url, int32_t *pid, char **err) {
	NSURL *target = [NSURL URLWithString:hc_nsstring(url)]; // nil for a malformed URL
	if (target == nil) {
		*err = strdup("not a URL");
		return HC_FAILED;
	}
	return hc_open(target, NULL, pid, err);
}

int32_t hc_frontmost_pid(char **name) {
	NSRunningApplication *app = [[NSWorkspace sharedWorkspace] frontmostApplication];
	if (app == nil) {
		*name = strdup("");
		return -1;
	}
	*name = hc_cstring(app.localizedName ?: app.bundleIdentifier ?: @"");
	return app.processIdentifier;
}

#if __MAC_OS_X_VERSION_MAX_ALLOWED < 140000
// macOS 14's cooperative activation, declared for an older SDK (the one
// check-darwin can assemble on Linux; make app refuses such an SDK).
@interface NSRunningApplication (HCCooperativeActivation)
- (BOOL)activateFromApplication:(NSRunningApplication *)application options:(NSApplicationActivationOptions)options;
@end
#endif

int hc_activate_cooperative(int32_t pid) {
	NSRunningApplication *target = [NSRunningApplication runningApplicationWithProcessIdentifier:pid];
	NSRunningApplication *front = [[NSWorkspace sharedWorkspace] frontmostApplication];
	if (target == nil || front == nil) return -1;
	// As if the app in front yielded to target.
	return [target activateFromApplication:front options:NSApplicationActivateAllWindows] ? 0 : -2;
}

int hc_activate_ax(int32_t pid) {
	AXUIElementRef app = AXUIElementCreateApplication(pid);
	if (app == NULL) return -1;
	AXError e = AXUIElementSetAttributeValue(app, kAXFrontmostAttribute, kCFBooleanTrue);
	CFTypeRef window = NULL;
	if (e == kAXErrorSuccess && AXUIElementCopyAttributeValue(app, kAXMainWindowAttribute, &window) == kAXErrorSuccess && window != NULL) {
		AXUIElementPerformAction((AXUIElementRef)window, kAXRaiseAction);
		CFRelease(window);
	}
	CFRelease(app);
	return e == kAXErrorSuccess ? 0 : (int)e;
}

// hc_bundle_string is an Info.plist string of bundle, or nil.
static NSString *hc_bundle_string(NSBundle *bundle, NSString *key) {
	id v = [bundle objectForInfoDictionaryKey:key];
	return [v isKindOfClass:[NSString class]] && [v length] > 0 ? v : nil;
}

// hc_resolved is what opening the app at url starts (protocol.ResolvedApp).
static char *hc_resolved(NSURL *url) {
	if (url == nil) return hc_json(@{@"found" : @NO});
	NSURL *real = [url URLByResolvingSymlinksInPath];
	NSBundle *bundle = [NSBundle bundleWithURL:real];
	NSString *exe = [[bundle.executableURL URLByResolvingSymlinksInPath] path];
	if (bundle == nil || exe.length == 0) return hc_json(@{@"found" : @NO});
	NSString *name = hc_bundle_string(bundle, @"CFBundleDisplayName") ?: hc_bundle_string(bundle, @"CFBundleName")
	                                                                  ?: [real.lastPathComponent stringByDeletingPathExtension];
	return hc_json(@{
		@"found" : @YES,
		@"kind" : @"bundle",
		@"id" : bundle.bundleIdentifier ?: @"",
		@"name" : name ?: @"",
		@"file" : real.path ?: @"",
		@"executable" : exe,
	});
}

char *hc_resolve_app_json(const char *name) { return hc_resolved(hc_app_url(hc_nsstring(name))); }

char *hc_default_app_json(const char *path) {
	NSString *p = hc_nsstring(path);
	if (p.length == 0) return hc_json(@{@"found" : @NO});
	return hc_resolved([[NSWorkspace sharedWorkspace] URLForApplicationToOpenURL:[NSURL fileURLWithPath:p]]);
}

// ---- Accessibility

static CFTypeRef hc_ax_copy(AXUIElementRef element, CFStringRef attribute) {
	CFTypeRef value = NULL;
	if (AXUIElementCopyAttributeValue(element, attribute, &value) != kAXErrorSuccess) return NULL;
	return value;
}

static NSString *hc_focused_window_title(pid_t pid) {
	AXUIElementRef app = AXUIElementCreateApplication(pid);
	NSString *title = @"";
	CFTypeRef window = hc_ax_copy(app, kAXFocusedWindowAttribute);
	if (window != NULL) {
		CFTypeRef t = hc_ax_copy((AXUIElementRef)window, kAXTitleAttribute);
		if (t != NULL && CFGetTypeID(t) == CFStringGetTypeID()) title = [(__bridge NSString *)t copy];
		if (t != NULL) CFRelease(t);
		CFRelease(window);
	}
	CFRelease(app);
	return title;
}

static NSDictionary *hc_app_dict(NSRunningApplication *app) {
	return @{
		@"name" : app.localizedName ?: @"",
		@"bundleId" : app.bundleIdentifier ?: @"",
		@"pid" : @(app.processIdentifier),
	};
}

char *hc_frontmost_app_json(void) {
	NSRunningApplication *app = [[NSWorkspace sharedWorkspace] frontmostApplication];
	if (app == nil) return NULL;
	NSMutableDictionary *d = [hc_app_dict(app) mutableCopy];
	d[@"windowTitle"] = hc_focused_window_title(app.processIdentifier);
	return hc_json(d);
}

static NSArray<NSRunningApplication *> *hc_regular_apps(void) {
	NSMutableArray *out = [NSMutableArray array];
	for (NSRunningApplication *app in [[NSWorkspace sharedWorkspace] runningApplications]) {
		if (app.activationPolicy == NSApplicationActivationPolicyRegular && !app.terminated) [out addObject:app];
	}
	return out;
}

char *hc_running_apps_json(void) {
	NSMutableArray *apps = [NSMutableArray array];
	for (NSRunningApplication *app in hc_regular_apps()) [apps addObject:hc_app_dict(app)];
	return hc_json(@{@"apps" : apps});
}

static NSString *hc_ax_string(id value) {
	if ([value isKindOfClass:[NSString class]]) return value;
	if ([value isKindOfClass:[NSNumber class]]) return [value stringValue];
	return nil;
}

// hc_ax_node reads one element with a single IPC round trip
// (AXUIElementCopyMultipleAttributeValues) and recurses into its children.
static NSDictionary *hc_ax_node(AXUIElementRef element, pid_t pid, int depth, int max_depth, BOOL only_visible,
                                atomic_int *budget) {
	if (atomic_load(budget) <= 0) return nil;
	NSArray *names = @[
		(__bridge NSString *)kAXRoleAttribute, (__bridge NSString *)kAXTitleAttribute,
		(__bridge NSString *)kAXDescriptionAttribute, (__bridge NSString *)kAXValueAttribute,
		(__bridge NSString *)kAXPositionAttribute, (__bridge NSString *)kAXSizeAttribute,
		(__bridge NSString *)kAXChildrenAttribute
	];
	CFArrayRef raw = NULL;
	if (AXUIElementCopyMultipleAttributeValues(element, (__bridge CFArrayRef)names, 0, &raw) != kAXErrorSuccess ||
	    raw == NULL) {
		return nil;
	}
	NSArray *values = CFBridgingRelease(raw);
	CGPoint position = CGPointZero;
	CGSize size = CGSizeZero;
	id pos = values[4], sz = values[5];
	if (CFGetTypeID((__bridge CFTypeRef)pos) == AXValueGetTypeID())
		AXValueGetValue((__bridge AXValueRef)pos, kAXValueCGPointType, &position);
	if (CFGetTypeID((__bridge CFTypeRef)sz) == AXValueGetTypeID())
		AXValueGetValue((__bridge AXValueRef)sz, kAXValueCGSizeType, &size);
	if (only_visible && depth > 0 && (size.width <= 0 || size.height <= 0)) return nil;
	if (atomic_fetch_sub(budget, 1) <= 0) return nil;

	NSString *title = hc_ax_string(values[1]), *desc = hc_ax_string(values[2]);
	NSMutableDictionary *node = [@{
		@"id" : [NSString stringWithFormat:@"%d:%lx", pid, (unsigned long)CFHash(element)],
		@"role" : hc_ax_string(values[0]) ?: @"",
		@"name" : title.length > 0 ? title : (desc ?: @""),
		@"frame" : @{@"x" : hc_number(position.x), @"y" : hc_number(position.y), @"w" : hc_number(size.width), @"h" : hc_number(size.height)},
	} mutableCopy];
	NSString *value = hc_ax_string(values[3]);
	if (value != nil) node[@"value"] = value.length > 4000 ? [value substringToIndex:4000] : value;
	if (depth < max_depth && [values[6] isKindOfClass:[NSArray class]]) {
		NSMutableArray *children = [NSMutableArray array];
		for (id child in (NSArray *)values[6]) {
			NSDictionary *c = hc_ax_node((__bridge AXUIElementRef)child, pid, depth + 1, max_depth, only_visible, budget);
			if (c != nil) [children addObject:c];
		}
		if (children.count > 0) node[@"children"] = children;
	}
	return node;
}

char *hc_ax_tree_json(const char *app_filter, int max_depth, int only_visible, int max_nodes, char **err) {
	// A hung application must not hang the walk: 2 s per accessibility call.
	static dispatch_once_t once;
	dispatch_once(&once, ^{
		AXUIElementRef systemWide = AXUIElementCreateSystemWide();
		AXUIElementSetMessagingTimeout(systemWide, 2.0);
		CFRelease(systemWide);
	});
	NSString *filter = hc_nsstring(app_filter);
	NSMutableArray<NSRunningApplication *> *apps = [NSMutableArray array];
	for (NSRunningApplication *app in hc_regular_apps()) {
		// A message to nil answers 0, NSOrderedSame: an app without a name
		// or bundle id would match every filter without the nil checks.
		NSString *name = app.localizedName, *bundle = app.bundleIdentifier;
		if (filter.length == 0 || (name != nil && [name caseInsensitiveCompare:filter] == NSOrderedSame) ||
		    (bundle != nil && [bundle caseInsensitiveCompare:filter] == NSOrderedSame)) {
			[apps addObject:app];
		}
	}
	if (filter.length > 0 && apps.count == 0) {
		*err = hc_cstring([NSString stringWithFormat:@"no running application named %@", filter]);
		return NULL;
	}
	// One application per concurrent worker; they share the node budget.
	atomic_int budget = max_nodes;
	atomic_int *shared = &budget;
	NSMutableArray *results = [NSMutableArray arrayWithCapacity:apps.count];
	for (NSUInteger i = 0; i < apps.count; i++) [results addObject:[NSNull null]];
	NSLock *lock = [[NSLock alloc] init];
	dispatch_apply(apps.count, dispatch_get_global_queue(QOS_CLASS_USER_INITIATED, 0), ^(size_t i) {
		NSRunningApplication *app = apps[i];
		AXUIElementRef element = AXUIElementCreateApplication(app.processIdentifier);
		NSDictionary *node = hc_ax_node(element, app.processIdentifier, 0, max_depth, only_visible != 0, shared);
		CFRelease(element);
		if (node != nil) {
			NSMutableDictionary *named = [node mutableCopy];
			named[@"name"] = app.localizedName ?: named[@"name"];
			[lock lock];
			results[i] = named;
			[lock unlock];
		}
	});
	NSMutableArray *nodes = [NSMutableArray array];
	for (id r in results) {
		if (r != [NSNull null]) [nodes addObject:r];
	}
	return hc_json(@{@"nodes" : nodes});
}

// ---- Clipboard

char *hc_clipboard_read(void) {
	return hc_cstring([[NSPasteboard generalPasteboard] stringForType:NSPasteboardTypeString]);
}

int hc_clipboard_write(const char *text) {
	NSPasteboard *pb = [NSPasteboard generalPasteboard];
	[pb clearContents];
	return [pb setString:hc_nsstring(text) forType:NSPasteboardTypeString] ? 0 : 1;
}

// ---- Main run loop (NSWorkspace's state is only kept current while it runs)

// hc_stop_requested makes a stop stick: CFRunLoopStop does nothing to a
// run loop that is not running yet, so a serve error before the loop ran
// used to leave the agent running its loop forever, and launchd's
// KeepAlive never restarted it.
static atomic_bool hc_stop_requested;

void hc_run_main_loop(void) {
	@autoreleasepool {
		[NSApplication sharedApplication];
		[NSApp setActivationPolicy:NSApplicationActivationPolicyProhibited];
		// A port keeps the run loop from returning while there is nothing to do.
		[[NSRunLoop mainRunLoop] addPort:[NSMachPort port] forMode:NSDefaultRunLoopMode];
	}
	while (!atomic_load(&hc_stop_requested)) {
		@autoreleasepool {
			CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1.0, false);
		}
	}
}

void hc_stop_main_loop(void) {
	atomic_store(&hc_stop_requested, true);
	CFRunLoopStop(CFRunLoopGetMain()); // at once if it runs; else within a second
}
