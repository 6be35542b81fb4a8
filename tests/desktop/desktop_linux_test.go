package desktop

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/systray"
	"github.com/godbus/dbus/v5"

	"github.com/hivecrew/hivecrew/app/desktop"
	"github.com/hivecrew/hivecrew/app/killswitch"
	"github.com/hivecrew/hivecrew/app/menubar"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// busy starts a helper (by start: daemontest.Start, or StartOnNetwork
// where devices pair) with n agents that keep working until stopped.
func busy(t *testing.T, start func(testing.TB, func(*daemon.Config)) *daemontest.Helper, mutate func(*daemon.Config), n int, titles ...string) (h *daemontest.Helper, llm *llmtest.Server, ids []string) {
	t.Helper()
	h = start(t, mutate)
	llm = llmtest.New(t)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	llm.Script("[[busy]]", llmtest.Turn{Msg: llmtest.Text("...").Msg, Hold: hold, Repeat: true})
	ctx := context.Background()
	name, base, model := "Scripted", llm.URL, "scripted"
	if _, err := h.Unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &name, BaseURL: &base, DefaultModelID: &model}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Unix.PatchSettings(ctx, map[string]any{"maxConcurrentVMs": n}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		task, err := h.Unix.CreateTask(ctx, wire.CreateTask{Description: titles[i] + "\n[[busy]]"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		daemontest.WaitTask(t, h.Unix, id, "running", 20*time.Second, func(t wire.Task) bool { return t.Status == "running" })
	}
	return h, llm, ids
}

func expectCancelled(t *testing.T, h *daemontest.Helper, ids []string) {
	t.Helper()
	for _, id := range ids {
		got := daemontest.WaitTask(t, h.Unix, id, "cancelled", 10*time.Second, func(t wire.Task) bool { return t.Status == "cancelled" })
		if got.ResultSummary == nil || !strings.Contains(*got.ResultSummary, "kill switch") {
			t.Fatalf("task %s ended %s: %v", id, got.Status, got.ResultSummary)
		}
	}
}

// TestKillSwitchShortcutStopsAgents: Ctrl+Shift+Escape pressed through
// XTEST on an Xvfb display stops the helper's running agents.
func TestKillSwitchShortcutStopsAgents(t *testing.T) {
	env := xenv.Start(t, xenv.Options{NoWM: true})
	h, _, ids := busy(t, daemontest.Start, nil, 2, "First busy agent", "Second busy agent")
	sc, err := killswitch.Parse("ctrl+shift+escape")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fired := make(chan struct{}, 4)
	done := make(chan error, 1)
	go func() {
		done <- killswitch.Listen(ctx, env.Display, sc, func() {
			fired <- struct{}{}
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer scancel()
			if _, err := h.Unix.StopAll(sctx); err != nil {
				t.Errorf("stop all: %v", err)
			}
		})
	}()
	// A key that is not the shortcut does nothing.
	time.Sleep(300 * time.Millisecond) // the grab is in place
	press(t, env, "ctrl+Escape")
	select {
	case <-fired:
		t.Fatal("Ctrl+Escape fired the kill switch")
	case <-time.After(300 * time.Millisecond):
	}
	press(t, env, "ctrl+shift+Escape")
	select {
	case <-fired:
	case err := <-done:
		t.Fatalf("listening ended: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the shortcut did not fire")
	}
	expectCancelled(t, h, ids)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Listen: %v", err)
	}
	// A second grab of the same shortcut while one holds it is refused.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go killswitch.Listen(ctx2, env.Display, sc, func() {})
	time.Sleep(300 * time.Millisecond)
	if err := killswitch.Listen(context.Background(), env.Display, sc, func() {}); err == nil || !strings.Contains(err.Error(), "another application") {
		t.Fatalf("a second grab: %v", err)
	}
}

func press(t *testing.T, env *xenv.Env, keys string) {
	t.Helper()
	cmd := exec.Command("xdotool", "key", "--clearmodifiers", keys)
	cmd.Env = append(os.Environ(), "DISPLAY="+env.Display)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("xdotool key %s: %v %s", keys, err, out)
	}
}

// watcher is the test's StatusNotifierWatcher: it records which bus names
// register an item.
type watcher struct {
	mu    sync.Mutex
	items []string
}

func (w *watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.items = append(w.items, string(sender))
	return nil
}

func (w *watcher) first() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.items) == 0 {
		return ""
	}
	return w.items[0]
}

// notifications is the test's notification server: it records what the
// app shows.
type notifications struct {
	mu   sync.Mutex
	seen []string
}

func (n *notifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen = append(n.seen, summary+": "+body)
	return uint32(len(n.seen)), nil
}

func (n *notifications) all() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.seen, "\n")
}

// node is a dbusmenu layout node: (id, properties, children).
type node struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []dbus.Variant
}

// entry is a menu entry as read over D-Bus.
type entry struct {
	id      int32
	label   string
	visible bool
	enabled bool
	depth   int
}

func flatten(n node, depth int, out *[]entry) {
	e := entry{id: n.ID, visible: true, enabled: true, depth: depth}
	if v, ok := n.Props["label"]; ok {
		e.label, _ = v.Value().(string)
	}
	if v, ok := n.Props["visible"]; ok {
		e.visible, _ = v.Value().(bool)
	}
	if v, ok := n.Props["enabled"]; ok {
		e.enabled, _ = v.Value().(bool)
	}
	*out = append(*out, e)
	for _, c := range n.Children {
		var child node
		if err := dbus.Store([]any{c.Value()}, &child); err == nil {
			flatten(child, depth+1, out)
		}
	}
}

// TestTrayMenuOverDBus: the tray registers with the session's
// StatusNotifierWatcher; its menu (read over dbusmenu) shows the running
// agents and every item of the menu; it answers devices asking to pair;
// clicking Stop All Agents stops the agents.
func TestTrayMenuOverDBus(t *testing.T) {
	// Show in Folder reaches the desktop's opener through the helper,
	// which checks the path first (core/reveal): recorded here.
	shownFolders := make(chan string, 4)
	h, llm, ids := busy(t, daemontest.StartOnNetwork, func(c *daemon.Config) {
		c.Launch = func(_ context.Context, p string) error { shownFolders <- p; return nil }
	}, 3, "Summarise the quarterly report", "Book the meeting room", "Quick one")
	if _, err := h.Unix.CreatePreset(context.Background(), wire.SavePreset{Name: "Morning sweep", Task: &wire.CreateTask{Description: "Sweep the inbox\n[[busy]]"}}); err != nil {
		t.Fatal(err)
	}
	// A schedule that is on is listed under Scheduled with its next run;
	// one that is off is not.
	for _, sc := range []wire.CreateSchedule{
		{Title: "Nightly digest", Description: "Digest the day", Schedule: &wire.When{Recurrence: &wire.Recurrence{Type: "daily", Hour: 23, Minute: 30}}},
		{Title: "Switched off", Description: "Never", IsEnabled: new(bool), Schedule: &wire.When{Recurrence: &wire.Recurrence{Type: "daily", Hour: 1}}},
	} {
		if _, err := h.Unix.CreateSchedule(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
	}
	tr := startTray(t, h.Unix)
	menu, notes, opened, read := tr.menu, tr.notes, tr.opened, tr.read
	deadline := time.Now().Add(10 * time.Second)
	// Like tray hosts, read twice: systray answers its first GetLayout one
	// level deep (a workaround for libdbusmenu-gtk3).
	read()
	var entries []entry
	for {
		entries = read()
		visible := ""
		for _, e := range entries {
			if e.visible {
				visible += e.label + "\n"
			}
		}
		if strings.Contains(visible, "Open\n") && strings.Contains(visible, "3 agents running") && strings.Contains(visible, "Summarise the quarterly report — running") &&
			strings.Contains(visible, "Book the meeting room — running") && strings.Contains(visible, "Nightly digest — ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the menu does not show the running agents:\n%s", visible)
		}
		time.Sleep(50 * time.Millisecond)
	}
	byLabel := map[string]entry{}
	for _, e := range entries {
		if e.visible && e.label != "" {
			byLabel[e.label] = e
		}
	}
	for _, want := range []string{"New Task…", "Start Preset", "Morning sweep", "Scheduled", "Manage Schedules…", "Stop All Agents  Ctrl+Shift+Esc", "Dashboard", "Settings…", "Quit Hivecrew", "Open", "Pause", "Cancel"} {
		if _, ok := byLabel[want]; !ok {
			t.Errorf("menu lacks %q", want)
		}
	}
	for label := range byLabel {
		if strings.HasPrefix(label, "Nightly digest — ") && !regexp.MustCompile(`— (today|tomorrow) 23:30$`).MatchString(label) {
			t.Errorf("the scheduled run reads %q; want its next run today or tomorrow at 23:30", label)
		}
		if strings.Contains(label, "Switched off") || label == "Nothing scheduled" {
			t.Errorf("the Scheduled submenu shows %q", label)
		}
	}
	click(t, menu, byLabel["Manage Schedules…"].id)
	select {
	case link := <-opened:
		if !strings.Contains(link, "next=%2Fschedules") {
			t.Fatalf("Manage Schedules… opened %s", link)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Manage Schedules… opened nothing")
	}
	// Dashboard opens a login link to the dashboard.
	click(t, menu, byLabel["Dashboard"].id)
	select {
	case link := <-opened:
		if !strings.Contains(link, "/login?token=") || !strings.Contains(link, "next=%2F") {
			t.Fatalf("dashboard link = %s", link)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Dashboard opened nothing")
	}
	// A task that ends is notified (over org.freedesktop.Notifications).
	if _, err := h.Unix.TaskAction(context.Background(), ids[2], wire.TaskAction{Action: "cancel"}); err != nil {
		t.Fatal(err)
	}
	finish := func(description string) string {
		finished, err := h.Unix.CreateTask(context.Background(), wire.CreateTask{Description: description})
		if err != nil {
			t.Fatal(err)
		}
		daemontest.WaitTask(t, h.Unix, finished.ID, "completed", 20*time.Second, func(t wire.Task) bool { return t.Status == "completed" })
		return finished.ID
	}
	notify := func(events ...string) {
		if _, err := h.Unix.PatchSettings(context.Background(), map[string]any{"notifyEvents": events}); err != nil {
			t.Fatal(err)
		}
	}
	// With completed tasks turned off in Settings (notifyEvents), one that
	// completes is not notified; turned on again, the next one is.
	notify("failed", "question")
	finish("Finish unnoticed")
	time.Sleep(time.Second) // ten of the menu's polls: it has seen the end
	notify("completed")
	quick := finish("Finish quickly")
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(notes.all(), "Task completed: Finish quickly") {
		if time.Now().After(deadline) {
			t.Fatalf("no notification of the completed task; shown: %q", notes.all())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The notification is about that task: a click opens its page.
	task := tr.about("Task completed: Finish quickly")
	if path, ok := desktop.NotificationTarget(desktop.NotificationClicked, task); !ok || path != "/tasks/"+quick {
		t.Fatalf("a click on the completed task's notification opens %q (about task %q), want /tasks/%s", path, task, quick)
	}
	if strings.Contains(notes.all(), "Quick one") {
		t.Fatalf("a task the user cancelled was notified: %q", notes.all())
	}
	if strings.Contains(notes.all(), "Finish unnoticed") {
		t.Fatalf("a completed task was notified with completed turned off: %q", notes.all())
	}
	// A finished task with an output is under Recent Results; a click
	// shows the folder its output was saved in.
	outDir := t.TempDir()
	llm.Script("[[report]]", append([]llmtest.Turn{llmtest.Tool("write_file", map[string]any{"path": "outbox/report.txt", "contents": "ok\n"})},
		llmtest.Done("Wrote the report.")...)...)
	report, err := h.Unix.CreateTask(context.Background(), wire.CreateTask{Description: "Write the report\n[[report]]", OutputDirectory: outDir})
	if err != nil {
		t.Fatal(err)
	}
	daemontest.WaitTask(t, h.Unix, report.ID, "completed", 20*time.Second, func(t wire.Task) bool { return t.Status == "completed" })
	var result entry
	deadline = time.Now().Add(5 * time.Second)
	for result.label == "" {
		for _, e := range read() {
			if e.visible && e.label == "Write the report — 1 file" {
				result = e
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("Recent Results does not list the finished task")
		}
		time.Sleep(50 * time.Millisecond)
	}
	click(t, menu, result.id)
	select {
	case p := <-shownFolders:
		if p != outDir {
			t.Fatalf("Show in Folder opened %s, want %s", p, outDir)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Recent Results entry showed no folder")
	}
	// A preset is started from the Start Preset submenu; its task opens.
	click(t, menu, byLabel["Morning sweep"].id)
	select {
	case link := <-opened:
		_, next, _ := strings.Cut(link, "next=%2Ftasks%2F")
		task, err := h.Unix.Task(context.Background(), next)
		if next == "" || err != nil || task.Title != "Morning sweep" {
			t.Fatalf("the preset opened %s: task %+v, %v", link, task, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("starting the preset opened nothing")
	}
	trayAnswersPairing(t, h, tr)
	click(t, menu, byLabel["Stop All Agents  Ctrl+Shift+Esc"].id)
	expectCancelled(t, h, ids[:2])
	deadline = time.Now().Add(5 * time.Second)
	for !containsLabel(read(), "no agents running") {
		if time.Now().After(deadline) {
			t.Fatal("the menu still shows agents after Stop All")
		}
		time.Sleep(50 * time.Millisecond)
	}
	tr.quit(t)
}

// tray is the menu-bar app running on a desktop of the test's own, read
// and clicked over D-Bus as a tray host does.
type tray struct {
	menu  dbus.BusObject
	notes *notifications
	// opened receives the links the menu opens; ran its end.
	opened chan string
	ran    chan error
	read   func() []entry
	// ended says the menu was quit.
	ended bool
	// notified is the task each notification is about, by its title and
	// body (a click on it opens that task on macOS:
	// desktop.NotificationTarget).
	mu       sync.Mutex
	notified map[string]string
}

// about is the task of the notification whose title and body begin with
// prefix.
func (tr *tray) about(prefix string) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for note, id := range tr.notified {
		if strings.HasPrefix(note, prefix) {
			return id
		}
	}
	return ""
}

// startTray starts an X display and session bus with the test's own
// StatusNotifierWatcher and notification server, and runs the menu on
// them for the helper c.
func startTray(t *testing.T, c menubar.Client) *tray {
	t.Helper()
	env := xenv.Start(t, xenv.Options{NoWM: true})
	var bus string
	for _, v := range env.Vars {
		if s, ok := strings.CutPrefix(v, "DBUS_SESSION_BUS_ADDRESS="); ok {
			bus = s
		}
	}
	if bus == "" {
		t.Fatal("the desktop has no session bus")
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus) // systray connects to the session bus
	conn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	w := &watcher{}
	if err := conn.Export(w, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the watcher name: %v %v", reply, err)
	}
	tr := &tray{notes: &notifications{}, opened: make(chan string, 4), ran: make(chan error, 1), notified: map[string]string{}}
	if err := conn.Export(tr.notes, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the notifications name: %v %v", reply, err)
	}
	go func() {
		tr.ran <- menubar.Run(menubar.Config{
			Client: c, Open: func(link string) error { tr.opened <- link; return nil }, Notify: func(task, title, body string) error {
				tr.mu.Lock()
				tr.notified[title+": "+body] = task
				tr.mu.Unlock()
				return desktop.Notify(task, title, body)
			},
			Shortcut: "Ctrl+Shift+Esc", Poll: 100 * time.Millisecond, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for w.first() == "" {
		if time.Now().After(deadline) {
			t.Fatal("the tray did not register with the StatusNotifierWatcher")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A test that fails midway leaves the menu running: end it before
	// the bus goes.
	t.Cleanup(func() {
		if !tr.ended {
			systray.Quit()
			select {
			case <-tr.ran:
			case <-time.After(5 * time.Second):
			}
		}
	})
	tr.menu = conn.Object(w.first(), dbus.ObjectPath(menuPath(t, conn, w.first())))
	tr.read = func() []entry {
		var rev uint32
		var root node
		if err := tr.menu.Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &root); err != nil {
			t.Fatalf("GetLayout: %v", err)
		}
		var out []entry
		flatten(root, 0, &out)
		return out
	}
	return tr
}

// quit clicks Quit Hivecrew and waits for the menu to end.
func (tr *tray) quit(t *testing.T) {
	t.Helper()
	for _, e := range tr.read() {
		if e.visible && e.label == "Quit Hivecrew" {
			click(t, tr.menu, e.id)
		}
	}
	select {
	case err := <-tr.ran:
		tr.ended = true
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Quit did not end the menu")
	}
}

func containsLabel(entries []entry, s string) bool {
	for _, e := range entries {
		if e.visible && strings.Contains(e.label, s) {
			return true
		}
	}
	return false
}

func click(t *testing.T, menu dbus.BusObject, id int32) {
	t.Helper()
	if err := menu.Call("com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(int32(0)), uint32(time.Now().Unix())).Err; err != nil {
		t.Fatalf("click %d: %v", id, err)
	}
}

// menuPath reads the item's Menu property (where its dbusmenu lives), as a
// tray host does.
func menuPath(t *testing.T, conn *dbus.Conn, item string) string {
	t.Helper()
	v, err := conn.Object(item, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.Menu")
	if err != nil {
		t.Fatalf("read the item's Menu property: %v", err)
	}
	p, ok := v.Value().(dbus.ObjectPath)
	if !ok {
		t.Fatalf("Menu property is %T", v.Value())
	}
	return string(p)
}
