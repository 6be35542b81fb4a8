// notify_darwin.h: user notifications through UNUserNotificationCenter
// (notify_darwin.m), used by notify_darwin.go.
#ifndef HIVECREW_NOTIFY_DARWIN_H
#define HIVECREW_NOTIFY_DARWIN_H

#include <stdint.h>

// Results of hc_notify and hc_notify_set_delegate.
enum { HC_NOTIFY_OK = 0, HC_NOTIFY_NO_BUNDLE = 1, HC_NOTIFY_NO_CENTER = 2 };

// hc_notify posts a notification about task ("" for none), asking for
// permission the first time. It returns HC_NOTIFY_NO_BUNDLE, without
// touching the notification center, in a process that has no bundle
// identifier: there +[UNUserNotificationCenter currentNotificationCenter]
// raises an exception.
int hc_notify(const char *identifier, const char *task, const char *title, const char *body);

// hc_notify_set_delegate makes the notification center's delegate one
// that presents notifications while the app is in front and passes a
// click to hcNotificationResponse with handle (a cgo.Handle). Call it
// before the app finishes launching (applicationWillFinishLaunching:), so
// that a click that launched the app is delivered too.
int hc_notify_set_delegate(uintptr_t handle);

#endif
