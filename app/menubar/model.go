// Package menubar is the Hivecrew menu-bar (tray) menu: its icon shows
// whether agents are idle, working or waiting for the user; it lists the
// running agents (open, pause or resume, cancel), lists the devices asking
// to pair with their code (approve or deny; each one notified), starts
// presets, lists the next scheduled runs and recent results (a click shows
// the folder of their outputs), stops every agent, opens the dashboard and
// settings, toggles start at login and quits (the helper and its agents
// keep running). It uses fyne.io/systray: on Linux a StatusNotifierItem
// with a dbusmenu, on macOS an NSStatusItem. The menu's content comes from
// the helper's API; what it shows is decided by pure, tested functions
// (Summarize, Notices, PresetEntries, ScheduleEntries, PairingEntries,
// PairingNotices, ResultEntries).
package menubar

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/wire"
)

// State is what the icon shows.
type State string

// Icon states.
const (
	Idle      State = "idle"
	Working   State = "working"
	Attention State = "attention" // a question or permission request waits
)

// Agent is one active task as the menu lists it.
type Agent struct {
	ID     string
	Title  string
	Status string
	// Waiting says the agent waits for the user (question, permission,
	// a plan to review).
	Waiting bool
}

// Label is the agent's menu entry.
func (a Agent) Label() string {
	title := cut(a.Title, 40)
	status := a.Status
	if a.Waiting {
		status = "needs you"
	}
	return fmt.Sprintf("%s — %s", title, status)
}

// Paused reports whether the entry offers Resume rather than Pause.
func (a Agent) Paused() bool { return a.Status == "paused" }

// Snapshot is the menu's content at one moment.
type Snapshot struct {
	State  State
	Agents []Agent // at most the slots the menu has
	// More counts the active agents beyond Agents.
	More int
	// Running, Paused, Queued count tasks by state.
	Running, Paused, Queued int
}

// activeStatuses are the task states the menu lists (planning and
// planReview: a plan-first task before its agent starts).
var activeStatuses = []string{"running", "paused", "waitingForVM", "queued", "planning", "planReview"}

// finishedStatuses are the ends the menu tells the user about.
var finishedStatuses = []string{"completed", "failed", "timedOut", "maxIterations", "planFailed", "writebackReview"}

// Summarize turns the active tasks (newest first) into the menu's content
// with at most slots agent entries: running and paused agents first, then
// those waiting for a VM or in the queue.
func Summarize(tasks []wire.Task, slots int) Snapshot {
	var s Snapshot
	var listed []Agent
	for pass := 0; pass < 2; pass++ {
		for _, t := range tasks {
			live := t.Status == "running" || t.Status == "paused"
			if (pass == 0) != live {
				continue
			}
			a := Agent{ID: t.ID, Title: t.Title, Status: t.Status,
				Waiting: t.PendingQuestion != nil || t.PendingPermission != nil || t.Status == "planReview"}
			listed = append(listed, a)
		}
	}
	for _, t := range tasks {
		switch t.Status {
		case "running":
			s.Running++
		case "paused":
			s.Paused++
		case "queued", "waitingForVM":
			s.Queued++
		}
	}
	s.State = Idle
	if s.Running+s.Paused > 0 {
		s.State = Working
	}
	for _, a := range listed {
		if a.Waiting {
			s.State = Attention
		}
	}
	if len(listed) > slots {
		s.More = len(listed) - slots
		listed = listed[:slots]
	}
	s.Agents = listed
	return s
}

// Headline is the menu's first (disabled) line.
func (s Snapshot) Headline() string {
	if s.Running+s.Paused+s.Queued == 0 {
		return "Hivecrew — no agents running"
	}
	var parts []string
	if s.Running > 0 {
		parts = append(parts, plural(s.Running, "agent")+" running")
	}
	if s.Paused > 0 {
		parts = append(parts, fmt.Sprintf("%d paused", s.Paused))
	}
	if s.Queued > 0 {
		parts = append(parts, fmt.Sprintf("%d queued", s.Queued))
	}
	return "Hivecrew — " + strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Notice is a desktop notification to show.
type Notice struct {
	TaskID      string
	Title, Body string
	// Event is what it tells, one of config.NotifyEventNames.
	Event string
}

// Notices compares two successive views of the tasks the menu watched and
// returns what to tell the user: a task that completed or failed, a plan
// or changes to review, and a new question or permission request. ended
// holds the final state of tasks that left the active list (fetched by the
// caller).
func Notices(before, after map[string]wire.Task, ended []wire.Task) []Notice {
	var out []Notice
	add := func(n Notice) { out = append(out, n) }
	for _, t := range ended {
		switch t.Status {
		case "completed":
			add(Notice{t.ID, "Task completed", summaryOf(t), config.NotifyCompleted})
		case "failed", "timedOut", "maxIterations", "planFailed":
			add(Notice{t.ID, "Task " + wire.EndWords(t.Status), summaryOf(t), config.NotifyFailed})
		case "writebackReview":
			add(Notice{t.ID, t.Title + ": changes to review", "Its changes to your folders wait for your review before they are written.", config.NotifyReview})
		}
	}
	for id, t := range after {
		prev := before[id]
		if t.Status == "planReview" && prev.Status != "planReview" {
			add(Notice{id, t.Title + ": plan ready", "Open the task to approve, edit or cancel its plan.", config.NotifyPlan})
		}
		if q := t.PendingQuestion; q != nil && (prev.PendingQuestion == nil || prev.PendingQuestion.ID != q.ID) {
			add(Notice{id, t.Title + " asks", q.Question, config.NotifyQuestion})
		}
		if p := t.PendingPermission; p != nil && (prev.PendingPermission == nil || prev.PendingPermission.ID != p.ID) {
			body := "Allow " + p.ToolName + "?"
			if p.ToolName == wire.PermissionSafetyCheck {
				// The provider's own check on a computer action: its words.
				body = cut(p.Details, 200) + " Approve or deny it in the task's window."
			}
			add(Notice{id, t.Title + " needs your approval", body, config.NotifyPermission})
		}
	}
	return out
}

// Wanted returns the notices of the events the user wants (the setting
// notifyEvents).
func Wanted(ns []Notice, events []string) []Notice {
	var out []Notice
	for _, n := range ns {
		if slices.Contains(events, n.Event) {
			out = append(out, n)
		}
	}
	return out
}

func summaryOf(t wire.Task) string {
	if t.ResultSummary != nil && *t.ResultSummary != "" {
		return t.Title + ": " + *t.ResultSummary
	}
	return t.Title
}

// PresetEntry is one preset as the Start Preset submenu shows it.
type PresetEntry struct {
	Preset         wire.Preset
	Label, Tooltip string
}

// PresetEntries are the submenu's entries for presets (listed most
// recently used first): at most slots, names cut to 40 characters, the
// task's description as the tooltip.
func PresetEntries(presets []wire.Preset, slots int) []PresetEntry {
	out := make([]PresetEntry, 0, min(len(presets), slots))
	for _, p := range presets[:min(len(presets), slots)] {
		out = append(out, PresetEntry{Preset: p, Label: cut(p.Name, 40), Tooltip: cut(strings.Join(strings.Fields(p.Task.Description), " "), 120)})
	}
	return out
}

// ScheduleEntry is one scheduled run as the Scheduled submenu shows it.
type ScheduleEntry struct {
	ID             string
	At             time.Time
	Label, Tooltip string
}

// ScheduleEntries are the next runs of the schedules that are on, soonest
// first, at most slots: "Morning report — today 09:30" in loc, the day
// named as "today", "tomorrow", a weekday within the week, else a date;
// the task's description as the tooltip.
func ScheduleEntries(schedules []wire.Schedule, now time.Time, loc *time.Location, slots int) []ScheduleEntry {
	var out []ScheduleEntry
	for _, sc := range schedules {
		if !sc.IsEnabled || sc.NextRunAt == nil {
			continue
		}
		title := sc.Title
		if r := []rune(title); len(r) > 40 {
			title = strings.TrimRight(string(r[:39]), " ") + "…"
		}
		tip := strings.Join(strings.Fields(sc.Description), " ")
		if r := []rune(tip); len(r) > 120 {
			tip = string(r[:119]) + "…"
		}
		at := *sc.NextRunAt
		out = append(out, ScheduleEntry{ID: sc.ID, At: at, Label: title + " — " + whenLabel(at, now, loc), Tooltip: tip})
	}
	slices.SortStableFunc(out, func(a, b ScheduleEntry) int { return a.At.Compare(b.At) })
	return out[:min(len(out), slots)]
}

// whenLabel names a time near now in loc: "today 09:30", "tomorrow 07:15",
// "Fri 18:00" within the week, else "2 Jan 08:00".
func whenLabel(at, now time.Time, loc *time.Location) string {
	at, now = at.In(loc), now.In(loc)
	clock := at.Format("15:04")
	y, m, d := now.Date()
	today := time.Date(y, m, d, 0, 0, 0, 0, loc)
	ay, am, ad := at.Date()
	day := time.Date(ay, am, ad, 0, 0, 0, 0, loc)
	switch days := int(day.Sub(today).Hours()/24 + 0.5); {
	case days == 0:
		return "today " + clock
	case days == 1:
		return "tomorrow " + clock
	case days > 1 && days < 7:
		return at.Format("Mon") + " " + clock
	}
	return at.Format("2 Jan") + " " + clock
}

// cut is s in at most n characters, the last an ellipsis when it was longer.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
