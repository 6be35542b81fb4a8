package desktop

import "testing"

// TestNotificationTarget: a click on a task's notification opens that
// task's page, one about no task the dashboard; a dismissal opens nothing;
// a task id that is not one (it comes back from the notification center)
// never becomes part of a path.
func TestNotificationTarget(t *testing.T) {
	for _, c := range []struct {
		action, task, path string
		open               bool
	}{
		{NotificationClicked, "0b3f6a52-5e1c-4c1e-9d1a-3f2b8c9d0e11", "/tasks/0b3f6a52-5e1c-4c1e-9d1a-3f2b8c9d0e11", true},
		{NotificationClicked, "", "/", true},
		{NotificationClicked, "../settings", "/", true},
		{NotificationClicked, "a/b", "/", true},
		{NotificationClicked, "x?next=//evil", "/", true},
		{NotificationDismissed, "0b3f6a52-5e1c-4c1e-9d1a-3f2b8c9d0e11", "", false},
		{"com.hivecrew.other", "0b3f6a52", "", false},
	} {
		path, open := NotificationTarget(c.action, c.task)
		if path != c.path || open != c.open {
			t.Errorf("NotificationTarget(%q, %q) = %q, %v; want %q, %v", c.action, c.task, path, open, c.path, c.open)
		}
	}
	if WindowKind("http://127.0.0.1:7777/login?token=t&next="+"%2Ftasks%2F0b3f6a52") != "tasks/0b3f6a52" {
		t.Error("the page a notification opens is not the task's window")
	}
}
