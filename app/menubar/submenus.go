package menubar

import (
	"context"
	"fmt"
	"time"

	"fyne.io/systray"

	"github.com/hivecrew/hivecrew/core/wire"
)

// startPreset starts the preset in slot i and opens its task.
func (m *Menu) startPreset(i int) {
	m.mu.Lock()
	p := m.shownPresets[i]
	m.mu.Unlock()
	if p.ID == "" {
		return
	}
	ctx, cancel := m.ctx()
	defer cancel()
	t, err := m.cfg.Client.RunPreset(ctx, p.ID, wire.RunPreset{})
	if err != nil {
		m.cfg.Log.Error("start preset", "preset", p.ID, "err", err)
		m.notify("", fmt.Sprintf("Could not start %q", p.Name), err.Error())
		return
	}
	m.open("/tasks/" + t.ID)
	m.refresh()
}

// refreshPresets lists the presets in the Start Preset submenu.
func (m *Menu) refreshPresets(ctx context.Context) {
	list, err := m.cfg.Client.Presets(ctx)
	if err != nil {
		m.cfg.Log.Warn("read presets", "err", err)
		return
	}
	shown := PresetEntries(list.Presets, PresetSlots)
	m.mu.Lock()
	for i := range m.shownPresets {
		m.shownPresets[i] = wire.Preset{}
		if i < len(shown) {
			m.shownPresets[i] = shown[i].Preset
		}
	}
	m.mu.Unlock()
	labels, tips := make([]string, len(shown)), make([]string, len(shown))
	for i, e := range shown {
		labels[i], tips[i] = e.Label, e.Tooltip
	}
	showIf(m.presets, fillItems(m.presetItems[:], labels, tips))
}

// fillItems shows items[i] for each label (with its tooltip) and hides
// the rest; it reports whether it showed any.
func fillItems(items []*systray.MenuItem, labels, tips []string) bool {
	for i, item := range items {
		if i >= len(labels) {
			item.Hide()
			continue
		}
		item.SetTitle(labels[i])
		item.SetTooltip(tips[i])
		item.Show()
	}
	return len(labels) > 0
}

// showIf shows or hides item.
func showIf(item *systray.MenuItem, show bool) {
	if show {
		item.Show()
	} else {
		item.Hide()
	}
}

// refreshSchedules lists the next scheduled runs in the Scheduled submenu.
func (m *Menu) refreshSchedules(ctx context.Context) {
	list, err := m.cfg.Client.Schedules(ctx)
	if err != nil {
		m.cfg.Log.Warn("read schedules", "err", err)
		return
	}
	shown := ScheduleEntries(list.Schedules, time.Now(), time.Local, ScheduleSlots)
	labels, tips := make([]string, len(shown)), make([]string, len(shown))
	for i, e := range shown {
		labels[i], tips[i] = e.Label, e.Tooltip
	}
	showIf(m.noRuns, !fillItems(m.scheduleItems[:], labels, tips))
}
