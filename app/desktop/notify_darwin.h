// notify_darwin.h: user notifications through UNUserNotificationCenter
// (notify_darwin.m), used by notify_darwin.go.
#ifndef HIVECREW_NOTIFY_DARWIN_H
#define HIVECREW_NOTIFY_DARWIN_H

// Results of hc_notify.
enum { HC_NOTIFY_OK = 0, HC_NOTIFY_NO_BUNDLE = 1, HC_NOTIFY_NO_CENTER = 2 };

// hc_notify posts a notification (asking for permission the first time).
// It returns HC_NOTIFY_NO_BUNDLE, without touching the notification
// center, in a process that has no bundle identifier: there
// +[UNUserNotificationCenter currentNotificationCenter] raises an
// exception.
int hc_notify(const char *identifier, const char *title, const char *body);

#endif
