package desktop

import (
	"net/url"
	"regexp"
)

// What the user did with a notification (UNNotificationResponse's
// actionIdentifier on macOS).
const (
	// NotificationClicked: the user clicked the notification.
	NotificationClicked = "com.apple.UNNotificationDefaultActionIdentifier"
	// NotificationDismissed: the user closed it.
	NotificationDismissed = "com.apple.UNNotificationDismissActionIdentifier"
)

// taskID is what a task id may look like (the helper's are UUIDs).
var taskID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// NotificationTarget is the web UI page a notification opens: a click on
// one about a task opens that task, a click on one about none (Stop All
// Agents failed) the dashboard; a dismissal or another action opens
// nothing. task comes back from the notification center: it becomes a
// path only if it looks like a task id (else the dashboard opens).
func NotificationTarget(action, task string) (path string, open bool) {
	if action != NotificationClicked {
		return "", false
	}
	if !taskID.MatchString(task) {
		return "/", true
	}
	return "/tasks/" + url.PathEscape(task), true
}
