// notify_darwin.m: user notifications with UNUserNotificationCenter (macOS
// 10.14 and later). NSUserNotificationCenter, deprecated since macOS 11,
// returns nil in a process without a bundle identifier, and darwinkit then
// panics with "object is nil"; UNUserNotificationCenter raises instead, so
// the bundle identifier is checked first. ARC. Thin by design: the center is
// thread-safe, and permission is asked once, by the first notification.
//
// The center's delegate (HCNotificationDelegate) answers the two questions
// macOS asks an app: willPresentNotification: while the app is active (a
// Hivecrew window is in front) — without an answer the notification is
// dropped, not shown — and didReceiveNotificationResponse: when the user
// clicks one, which opens the task it is about (desktop.NotificationTarget
// decides, in Go).

#import <Foundation/Foundation.h>
#import <UserNotifications/UserNotifications.h>

#include "notify_darwin.h"
#include "_cgo_export.h"

// The task a notification is about, in its userInfo.
static NSString *const hc_task_key = @"hivecrewTask";

@interface HCNotificationDelegate : NSObject <UNUserNotificationCenterDelegate>
@property(nonatomic) uintptr_t handle;
@end

@implementation HCNotificationDelegate

// Asked only while the app is active: show it as a banner, in the list and
// with its sound, as when the app is in the background.
- (void)userNotificationCenter:(UNUserNotificationCenter *)center
       willPresentNotification:(UNNotification *)notification
         withCompletionHandler:(void (^)(UNNotificationPresentationOptions options))completionHandler {
	completionHandler(UNNotificationPresentationOptionBanner | UNNotificationPresentationOptionList | UNNotificationPresentationOptionSound);
}

- (void)userNotificationCenter:(UNUserNotificationCenter *)center
    didReceiveNotificationResponse:(UNNotificationResponse *)response
             withCompletionHandler:(void (^)(void))completionHandler {
	id task = response.notification.request.content.userInfo[hc_task_key];
	NSString *taskID = [task isKindOfClass:[NSString class]] ? task : @"";
	const char *action = response.actionIdentifier.UTF8String;
	const char *tid = taskID.UTF8String;
	// Go opens the page on another goroutine: this returns at once.
	hcNotificationResponse(self.handle, (char *)(action ?: ""), (char *)(tid ?: ""));
	completionHandler();
}
@end

// The center holds its delegate weakly: this keeps it for the life of the
// app (it is set once, on the main thread, before the app has launched).
static HCNotificationDelegate *hc_delegate;

int hc_notify_set_delegate(uintptr_t handle) {
	@autoreleasepool {
		if (NSBundle.mainBundle.bundleIdentifier == nil) return HC_NOTIFY_NO_BUNDLE;
		// checkdarwin:allow the line above returns first in a process without a bundle id
		UNUserNotificationCenter *center = [UNUserNotificationCenter currentNotificationCenter];
		if (center == nil) return HC_NOTIFY_NO_CENTER;
		HCNotificationDelegate *d = [[HCNotificationDelegate alloc] init];
		d.handle = handle;
		hc_delegate = d;
		center.delegate = d;
	}
	return HC_NOTIFY_OK;
}

int hc_notify(const char *identifier, const char *task, const char *title, const char *body) {
	@autoreleasepool {
		if (NSBundle.mainBundle.bundleIdentifier == nil) return HC_NOTIFY_NO_BUNDLE;
		// checkdarwin:allow the line above returns first in a process without a bundle id
		UNUserNotificationCenter *center = [UNUserNotificationCenter currentNotificationCenter];
		if (center == nil) return HC_NOTIFY_NO_CENTER;
		UNMutableNotificationContent *content = [[UNMutableNotificationContent alloc] init];
		content.title = [NSString stringWithUTF8String:title] ?: @"Hivecrew";
		content.body = [NSString stringWithUTF8String:body] ?: @"";
		NSString *taskID = [NSString stringWithUTF8String:task] ?: @"";
		if (taskID.length > 0) content.userInfo = @{hc_task_key : taskID};
		NSString *ident = [NSString stringWithUTF8String:identifier] ?: [[NSUUID UUID] UUIDString];
		UNNotificationRequest *request = [UNNotificationRequest requestWithIdentifier:ident content:content trigger:nil];
		// Asking again once granted or refused answers at once without a
		// prompt; the request is added either way (macOS drops it when
		// notifications are off).
		[center requestAuthorizationWithOptions:(UNAuthorizationOptionAlert | UNAuthorizationOptionSound)
		                      completionHandler:^(BOOL granted, NSError *error) {
			if (!granted) return;
			[center addNotificationRequest:request withCompletionHandler:nil];
		}];
	}
	return HC_NOTIFY_OK;
}
