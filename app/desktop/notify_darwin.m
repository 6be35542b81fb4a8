// notify_darwin.m: user notifications with UNUserNotificationCenter (macOS
// 10.14 and later). NSUserNotificationCenter, deprecated since macOS 11,
// returns nil in a process without a bundle identifier, and darwinkit then
// panics with "object is nil"; UNUserNotificationCenter raises instead, so
// the bundle identifier is checked first. ARC. Thin by design: the center is
// thread-safe, and permission is asked once, by the first notification.

#import <Foundation/Foundation.h>
#import <UserNotifications/UserNotifications.h>

#include "notify_darwin.h"

int hc_notify(const char *identifier, const char *title, const char *body) {
	@autoreleasepool {
		if (NSBundle.mainBundle.bundleIdentifier == nil) return HC_NOTIFY_NO_BUNDLE;
		// checkdarwin:allow the line above returns first in a process without a bundle id
		UNUserNotificationCenter *center = [UNUserNotificationCenter currentNotificationCenter];
		if (center == nil) return HC_NOTIFY_NO_CENTER;
		UNMutableNotificationContent *content = [[UNMutableNotificationContent alloc] init];
		content.title = [NSString stringWithUTF8String:title] ?: @"Hivecrew";
		content.body = [NSString stringWithUTF8String:body] ?: @"";
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
