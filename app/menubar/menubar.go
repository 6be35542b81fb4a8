package menubar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"fyne.io/systray"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Slots is how many agents the menu lists by name.
const Slots = 8

// PresetSlots is how many presets the Start Preset submenu lists (the most
// recently used first).
const PresetSlots = 10

// ScheduleSlots is how many scheduled runs the Scheduled submenu lists
// (the soonest first).
const ScheduleSlots = 5

// presetEvery is how many polls pass between readings of the presets and
// the schedules (they change when the user edits them, and schedules'
// next runs when they run).
const presetEvery = 5

// Client is what the menu needs of the helper; *client.Client has it.
type Client interface {
	ListTasks(ctx context.Context, q client.TaskQuery) (wire.TaskList, error)
	TaskAction(ctx context.Context, id string, a wire.TaskAction) (wire.Task, error)
	StopAll(ctx context.Context) (wire.StopAll, error)
	LoginLink(ctx context.Context) (wire.LoginLink, error)
	Settings(ctx context.Context) (config.Settings, error)
	Presets(ctx context.Context) (wire.PresetList, error)
	RunPreset(ctx context.Context, idOrName string, in wire.RunPreset) (wire.Task, error)
	Schedules(ctx context.Context) (wire.ScheduleList, error)
	Pairings(ctx context.Context) ([]wire.Pairing, error)
	ApprovePairing(ctx context.Context, code string) (wire.Pairing, error)
	DenyPairing(ctx context.Context, code string) (wire.Pairing, error)
	TaskFiles(ctx context.Context, id string) (wire.TaskFiles, error)
	OpenOutput(ctx context.Context, id, name string, folder bool) error
}

// Config configures the menu. Client, Open and Log are required.
type Config struct {
	Client Client
	// Open shows a page of the web UI (a login link with its path): a
	// native window on macOS, the browser on Linux.
	Open func(link string) error
	// Notify, if set, shows a desktop notification about a task ("" for
	// none); on macOS a click on it opens the task (OpenPage).
	Notify func(task, title, body string) error
	// Shortcut is the kill switch as shown in the menu ("⌘⇧⎋").
	Shortcut string
	// StartAtLogin, if set, backs the Start at Login checkbox.
	StartAtLogin interface {
		Enabled() bool
		Set(on bool) error
	}
	// Poll is how often the menu reads the agents; default 1 s.
	Poll time.Duration
	// OnQuit is called when the user quits the menu (the helper and its
	// agents keep running).
	OnQuit func()
	Log    *slog.Logger
}

// Menu is the running menu.
type Menu struct {
	cfg Config

	headline, newTask, presets, more, stopAll, dashboard, settings, login, quit *systray.MenuItem
	slots                                                                       [Slots]slot
	presetItems                                                                 [PresetSlots]*systray.MenuItem
	// scheduled is the Scheduled submenu: its runs, "Nothing scheduled"
	// when there are none, and Manage Schedules….
	scheduled, noRuns, manageSchedules *systray.MenuItem
	scheduleItems                      [ScheduleSlots]*systray.MenuItem
	pairItems                          [PairingSlots]pairSlot

	// results is the Recent Results submenu (finished tasks with outputs).
	results     *systray.MenuItem
	resultItems [ResultSlots]*systray.MenuItem

	// mu guards shown (the agents in the slots), last (the previous view
	// of the active tasks), since/told (the tasks that ended after since
	// and were notified), for notifications, and shownPresets and polls.
	mu    sync.Mutex
	shown [Slots]Agent
	last  map[string]wire.Task
	since time.Time
	told  map[string]bool
	// shownPresets are the presets in presetItems; polls counts refreshes
	// (the presets are read every presetEvery).
	shownPresets [PresetSlots]wire.Preset
	shownResults [ResultSlots]string
	polls        int
	// shownPairings are the codes in pairItems; asked holds every code
	// pending at the last poll (nil before the first), for notices.
	shownPairings [PairingSlots]string
	asked         map[string]bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// slot is one agent entry and its submenu.
type slot struct {
	item, open, pause, cancel *systray.MenuItem
}

// pairSlot is one device asking to pair, and its submenu.
type pairSlot struct {
	item, approve, deny *systray.MenuItem
}

// New checks cfg and returns a menu; hand Ready and Exit to systray.
func New(cfg Config) (*Menu, error) {
	if cfg.Client == nil || cfg.Open == nil || cfg.Log == nil {
		return nil, errors.New("menubar: Client, Open and Log are required")
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	return &Menu{cfg: cfg, stop: make(chan struct{})}, nil
}

// Run shows the menu and blocks until Quit (Linux and other systray
// platforms that own their loop).
func Run(cfg Config) error {
	m, err := New(cfg)
	if err != nil {
		return err
	}
	systray.Run(m.Ready, m.Exit)
	return nil
}

// Ready builds the menu and starts watching the helper (systray's onReady).
func (m *Menu) Ready() {
	systray.SetTemplateIcon(icon(Idle, true), icon(Idle, false))
	systray.SetTitle("")
	systray.SetTooltip("Hivecrew")
	m.headline = systray.AddMenuItem("Hivecrew", "")
	m.headline.Disable()
	for i := range m.pairItems {
		p := &m.pairItems[i]
		p.item = systray.AddMenuItem("", "")
		p.approve = p.item.AddSubMenuItem("Approve", "The device shows this code: sign it in")
		p.deny = p.item.AddSubMenuItem("Deny", "Refuse this device")
		p.item.Hide()
	}
	m.newTask = systray.AddMenuItem("New Task…", "Describe a task for an agent")
	m.presets = systray.AddMenuItem("Start Preset", "Start a saved task")
	for i := range m.presetItems {
		m.presetItems[i] = m.presets.AddSubMenuItem("", "")
		m.presetItems[i].Hide()
	}
	m.presets.Hide()
	m.scheduled = systray.AddMenuItem("Scheduled", "The next scheduled runs")
	for i := range m.scheduleItems {
		m.scheduleItems[i] = m.scheduled.AddSubMenuItem("", "")
		m.scheduleItems[i].Hide()
	}
	m.noRuns = m.scheduled.AddSubMenuItem("Nothing scheduled", "")
	m.noRuns.Disable()
	m.manageSchedules = m.scheduled.AddSubMenuItem("Manage Schedules…", "Create, edit, turn on or off and run schedules")
	m.results = systray.AddMenuItem("Recent Results", "Show the folder of a finished task's outputs")
	for i := range m.resultItems {
		m.resultItems[i] = m.results.AddSubMenuItem("", "")
		m.resultItems[i].Hide()
	}
	m.results.Hide()
	systray.AddSeparator()
	for i := range m.slots {
		s := &m.slots[i]
		s.item = systray.AddMenuItem("", "")
		s.open = s.item.AddSubMenuItem("Open", "Watch or take over this agent")
		s.pause = s.item.AddSubMenuItem("Pause", "Pause this agent")
		s.cancel = s.item.AddSubMenuItem("Cancel", "Stop this agent")
		s.item.Hide()
	}
	m.more = systray.AddMenuItem("", "Open the dashboard")
	m.more.Hide()
	systray.AddSeparator()
	stopLabel := "Stop All Agents"
	if m.cfg.Shortcut != "" {
		stopLabel += "  " + m.cfg.Shortcut
	}
	m.stopAll = systray.AddMenuItem(stopLabel, "The kill switch: cancel every agent and stop its VM")
	m.dashboard = systray.AddMenuItem("Dashboard", "Open the dashboard")
	m.settings = systray.AddMenuItem("Settings…", "Providers, VMs, templates, safety")
	if m.cfg.StartAtLogin != nil {
		m.login = systray.AddMenuItemCheckbox("Start at Login", "Start Hivecrew when you log in", m.cfg.StartAtLogin.Enabled())
	}
	systray.AddSeparator()
	m.quit = systray.AddMenuItem("Quit Hivecrew", "Close the menu; agents keep running in the helper")

	m.wg.Add(3)
	go func() { defer m.wg.Done(); m.handleClicks() }()
	go func() { defer m.wg.Done(); m.handleStopAll() }()
	go func() { defer m.wg.Done(); m.watch() }()
}

// Exit stops watching (systray's onExit).
func (m *Menu) Exit() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	m.wg.Wait()
	if m.cfg.OnQuit != nil {
		m.cfg.OnQuit()
	}
}

func (m *Menu) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// OpenPage shows a page of the web UI (a path: "/tasks/ID", "/"), as a
// click on a notification asks.
func (m *Menu) OpenPage(path string) { m.open(path) }

// open shows a page of the web UI through a fresh login link.
func (m *Menu) open(path string) {
	ctx, cancel := m.ctx()
	defer cancel()
	link, err := m.cfg.Client.LoginLink(ctx)
	if err != nil {
		m.cfg.Log.Error("open the web UI", "err", err)
		return
	}
	if err := m.cfg.Open(link.URL + "&next=" + url.QueryEscape(path)); err != nil {
		m.cfg.Log.Error("open the web UI", "err", err)
	}
}

// StopAll is the kill switch, for the menu and the global shortcut.
func (m *Menu) StopAll() {
	ctx, cancel := m.ctx()
	defer cancel()
	res, err := m.cfg.Client.StopAll(ctx)
	if err != nil {
		m.cfg.Log.Error("stop all agents", "err", err)
		m.notify("", "Stop All Agents failed", err.Error())
		return
	}
	m.cfg.Log.Warn("kill switch: agents stopped", "tasks", len(res.Stopped), "ms", res.DurationMs)
	m.refresh()
}

func (m *Menu) notify(task, title, body string) {
	if m.cfg.Notify == nil {
		return
	}
	if err := m.cfg.Notify(task, title, body); err != nil {
		m.cfg.Log.Warn("notification", "err", err)
	}
}

// handleStopAll serves Stop All Agents on its own: systray drops a click
// that finds no one waiting, and the kill switch must not be lost behind
// another item's action (a slow pause, a preset starting).
func (m *Menu) handleStopAll() {
	for {
		select {
		case <-m.stop:
			return
		case <-m.stopAll.ClickedCh:
			m.StopAll()
		}
	}
}

// handleClicks serves the menu's items but Stop All Agents.
func (m *Menu) handleClicks() {
	var loginClicked <-chan struct{}
	if m.login != nil {
		loginClicked = m.login.ClickedCh
	}
	slotClicks := make(chan func(), 1)
	for i, item := range m.presetItems {
		m.forward(item, slotClicks, func() { m.startPreset(i) })
	}
	for _, item := range m.scheduleItems {
		m.forward(item, slotClicks, func() { m.open("/schedules") })
	}
	for i := range m.pairItems {
		p, i := &m.pairItems[i], i
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			for {
				var approve bool
				select {
				case <-m.stop:
					return
				case <-p.approve.ClickedCh:
					approve = true
				case <-p.deny.ClickedCh:
				}
				select {
				case slotClicks <- func() { m.answerPairing(i, approve) }:
				case <-m.stop:
					return
				}
			}
		}()
	}
	for i, item := range m.resultItems {
		m.forward(item, slotClicks, func() { m.showResult(i) })
	}
	for i := range m.slots {
		s, i := &m.slots[i], i
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			for {
				var f func()
				select {
				case <-m.stop:
					return
				case <-s.open.ClickedCh:
					f = func() { m.open("/tasks/" + m.agent(i).ID) }
				case <-s.item.ClickedCh:
					f = func() { m.open("/tasks/" + m.agent(i).ID) }
				case <-s.pause.ClickedCh:
					f = func() { m.pauseOrResume(m.agent(i)) }
				case <-s.cancel.ClickedCh:
					f = func() { m.act(m.agent(i), wire.ActionCancel) }
				}
				select {
				case slotClicks <- f:
				case <-m.stop:
					return
				}
			}
		}()
	}
	for {
		select {
		case <-m.stop:
			return
		case f := <-slotClicks:
			f()
		case <-m.newTask.ClickedCh:
			m.open("/#new")
		case <-m.more.ClickedCh:
			m.open("/")
		case <-m.dashboard.ClickedCh:
			m.open("/")
		case <-m.settings.ClickedCh:
			m.open("/settings")
		case <-m.manageSchedules.ClickedCh:
			m.open("/schedules")
		case <-loginClicked:
			on := !m.login.Checked()
			if err := m.cfg.StartAtLogin.Set(on); err != nil {
				m.cfg.Log.Error("start at login", "err", err)
				m.notify("", "Start at Login", err.Error())
				continue
			}
			if on {
				m.login.Check()
			} else {
				m.login.Uncheck()
			}
		case <-m.quit.ClickedCh:
			systray.Quit()
			return
		}
	}
}

// forward hands each click of item to clicks as f, until Exit.
func (m *Menu) forward(item *systray.MenuItem, clicks chan<- func(), f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			select {
			case <-m.stop:
				return
			case <-item.ClickedCh:
			}
			select {
			case clicks <- f:
			case <-m.stop:
				return
			}
		}
	}()
}

func (m *Menu) agent(i int) Agent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shown[i]
}

func (m *Menu) pauseOrResume(a Agent) {
	if a.Paused() {
		m.act(a, wire.ActionResume)
	} else {
		m.act(a, wire.ActionPause)
	}
}

func (m *Menu) act(a Agent, action string) {
	if a.ID == "" {
		return
	}
	ctx, cancel := m.ctx()
	defer cancel()
	if _, err := m.cfg.Client.TaskAction(ctx, a.ID, wire.TaskAction{Action: action}); err != nil {
		m.cfg.Log.Error("menu action", "task", a.ID, "action", action, "err", err)
		m.notify(a.ID, fmt.Sprintf("Could not %s %q", action, a.Title), err.Error())
	}
	m.refresh()
}

// watch refreshes the menu every Poll until Exit.
func (m *Menu) watch() {
	t := time.NewTicker(m.cfg.Poll)
	defer t.Stop()
	for {
		m.refresh()
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
	}
}

// refresh reads the active tasks and updates the icon, the entries and
// the notifications.
func (m *Menu) refresh() {
	ctx, cancel := m.ctx()
	defer cancel()
	list, err := m.cfg.Client.ListTasks(ctx, client.TaskQuery{Statuses: activeStatuses, Limit: 200})
	if err != nil {
		m.headline.SetTitle("Hivecrew — helper not reachable")
		systray.SetTemplateIcon(icon(Idle, true), icon(Idle, false))
		return
	}
	snap := Summarize(list.Items(), Slots)
	if m.refreshPairings(ctx) {
		snap.State = Attention
	}
	m.mu.Lock()
	readPresets := m.polls%presetEvery == 0
	m.polls++
	m.mu.Unlock()
	if readPresets {
		m.refreshPresets(ctx)
		m.refreshSchedules(ctx)
		m.refreshResults(ctx)
	}
	now := make(map[string]wire.Task, len(list.Tasks))
	for _, t := range list.Tasks {
		now[t.ID] = t.Task
	}
	m.mu.Lock()
	before := m.last
	m.last = now
	for i := range m.shown {
		m.shown[i] = Agent{}
		if i < len(snap.Agents) {
			m.shown[i] = snap.Agents[i]
		}
	}
	m.mu.Unlock()

	systray.SetTemplateIcon(icon(snap.State, true), icon(snap.State, false))
	systray.SetTooltip(snap.Headline())
	m.headline.SetTitle(snap.Headline())
	for i := range m.slots {
		s := &m.slots[i]
		if i >= len(snap.Agents) {
			s.item.Hide()
			continue
		}
		a := snap.Agents[i]
		s.item.SetTitle(a.Label())
		if a.Paused() {
			s.pause.SetTitle("Resume")
		} else {
			s.pause.SetTitle("Pause")
		}
		s.item.Show()
	}
	if snap.More > 0 {
		m.more.SetTitle(fmt.Sprintf("%d more…", snap.More))
		m.more.Show()
	} else {
		m.more.Hide()
	}
	ended := m.endedSince(ctx)
	if before == nil {
		return // the first view: nothing has changed yet
	}
	all := Notices(before, now, ended)
	if len(all) == 0 {
		return
	}
	// Only those the user wants (all when the settings cannot be read).
	wanted := config.NotifyEventNames
	if s, err := m.cfg.Client.Settings(ctx); err == nil {
		wanted = s.NotifyEvents
	}
	for _, n := range Wanted(all, wanted) {
		m.notify(n.TaskID, n.Title, n.Body)
	}
}

// endedSince returns the tasks that ended since the menu started and were
// not notified yet (however short they ran).
func (m *Menu) endedSince(ctx context.Context) []wire.Task {
	m.mu.Lock()
	if m.since.IsZero() {
		// Whole seconds: the API sends completedAt in whole seconds.
		m.since, m.told = time.Now().Truncate(time.Second), map[string]bool{}
	}
	since := m.since
	m.mu.Unlock()
	list, err := m.cfg.Client.ListTasks(ctx, client.TaskQuery{Statuses: finishedStatuses,
		Sort: "completedAt", Order: "desc", Limit: 20})
	if err != nil {
		return nil
	}
	var out []wire.Task
	m.mu.Lock()
	defer m.mu.Unlock()
	told := make(map[string]bool, len(list.Tasks)) // only the latest can be new
	for _, t := range list.Tasks {
		told[t.ID] = true
		if t.CompletedAt == nil || t.CompletedAt.Before(since) || m.told[t.ID] {
			continue
		}
		out = append(out, t.Task)
	}
	m.told = told
	return out
}
