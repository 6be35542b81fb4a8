#!/usr/bin/env python3
"""Jotter: the starter suite's small note-taking app (GTK 3, python3-gi).

Its Preferences dialog (Edit > Preferences, Ctrl+,) edits the settings
in ~/.config/jotter/settings.ini, which it writes when Save is pressed
(Cancel and Escape discard the changes). The window follows them: the
theme and the notes' font size.
"""

import configparser
import os
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gio, Gtk  # noqa: E402

CONFIG = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "jotter", "settings.ini")
THEMES = [("light", "Light"), ("dark", "Dark"), ("sepia", "Sepia")]
# section, key, default
FIELDS = [
    ("profile", "display_name", "Guest"),
    ("appearance", "theme", "light"),
    ("appearance", "font_size", "11"),
    ("autosave", "autosave", "false"),
    ("autosave", "autosave_minutes", "10"),
]


def load():
    cp = configparser.ConfigParser()
    cp.read(CONFIG)
    return {k: cp.get(s, k, fallback=d) for s, k, d in FIELDS}


def save(settings):
    cp = configparser.ConfigParser()
    for s, k, _ in FIELDS:
        if not cp.has_section(s):
            cp.add_section(s)
        cp.set(s, k, settings[k])
    os.makedirs(os.path.dirname(CONFIG), exist_ok=True)
    tmp = CONFIG + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        cp.write(f)
    os.replace(tmp, CONFIG)


def number(value, default, low, high):
    try:
        return min(max(int(value), low), high)
    except ValueError:
        return default


class Preferences(Gtk.Dialog):
    def __init__(self, parent, settings):
        super().__init__(title="Jotter Preferences", transient_for=parent, modal=True)
        self.add_button("_Cancel", Gtk.ResponseType.CANCEL)
        self.add_button("_Save", Gtk.ResponseType.OK)
        self.set_default_response(Gtk.ResponseType.OK)
        grid = Gtk.Grid(column_spacing=12, row_spacing=8, margin=16)
        self.get_content_area().add(grid)

        self.name = Gtk.Entry(text=settings["display_name"])
        self.theme = Gtk.ComboBoxText()
        for tid, label in THEMES:
            self.theme.append(tid, label)
        self.theme.set_active_id(settings["theme"]) or self.theme.set_active(0)
        self.size = Gtk.SpinButton.new_with_range(8, 32, 1)
        self.size.set_value(number(settings["font_size"], 11, 8, 32))
        self.autosave = Gtk.CheckButton.new_with_mnemonic("Save notes _automatically")
        self.autosave.set_active(settings["autosave"] == "true")
        self.minutes = Gtk.SpinButton.new_with_range(1, 60, 1)
        self.minutes.set_value(number(settings["autosave_minutes"], 10, 1, 60))
        self.autosave.connect("toggled", lambda b: self.minutes.set_sensitive(b.get_active()))
        self.minutes.set_sensitive(self.autosave.get_active())

        rows = [("Display name", self.name), ("Theme", self.theme), ("Font size", self.size),
                (None, self.autosave), ("Every (minutes)", self.minutes)]
        for i, (label, widget) in enumerate(rows):
            if label:
                grid.attach(Gtk.Label(label=label, xalign=0), 0, i, 1, 1)
            grid.attach(widget, 1, i, 1, 1)
        self.show_all()
        self.name.grab_focus()

    def settings(self):
        for spin in (self.size, self.minutes):
            spin.update()
        return {
            "display_name": self.name.get_text().strip(),
            "theme": self.theme.get_active_id() or "light",
            "font_size": str(self.size.get_value_as_int()),
            "autosave": "true" if self.autosave.get_active() else "false",
            "autosave_minutes": str(self.minutes.get_value_as_int()),
        }


class Jotter(Gtk.Application):
    def __init__(self):
        super().__init__(application_id="org.hivecrew.Jotter", flags=Gio.ApplicationFlags.FLAGS_NONE)
        self.window = None
        self.css = Gtk.CssProvider()

    def do_startup(self):
        Gtk.Application.do_startup(self)
        for name, handler in (("preferences", self.on_preferences), ("quit", lambda *_: self.quit())):
            action = Gio.SimpleAction.new(name, None)
            action.connect("activate", handler)
            self.add_action(action)
        self.set_accels_for_action("app.preferences", ["<Control>comma"])
        self.set_accels_for_action("app.quit", ["<Control>q"])
        menu, file, edit = Gio.Menu(), Gio.Menu(), Gio.Menu()
        file.append("_Quit", "app.quit")
        edit.append("_Preferences", "app.preferences")
        menu.append_submenu("_File", file)
        menu.append_submenu("_Edit", edit)
        self.set_menubar(menu)

    def do_activate(self):
        if self.window is None:
            self.window = Gtk.ApplicationWindow(application=self, title="Jotter", default_width=640, default_height=420)
            self.window.set_show_menubar(True)
            view = Gtk.TextView(wrap_mode=Gtk.WrapMode.WORD, left_margin=12, top_margin=12)
            view.get_buffer().set_text("Shopping: eggs, bread, milk\nCall the plumber on Tuesday\n")
            view.get_style_context().add_provider(self.css, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION)
            scroll = Gtk.ScrolledWindow()
            scroll.add(view)
            self.window.add(scroll)
            self.apply(load())
            self.window.show_all()
        self.window.present()

    def apply(self, settings):
        Gtk.Settings.get_default().set_property("gtk-application-prefer-dark-theme", settings["theme"] == "dark")
        background = {"sepia": "background-color: #f4ecd8; color: #5b4636;"}.get(settings["theme"], "")
        size = number(settings["font_size"], 11, 8, 32)
        self.css.load_from_data(f"textview, textview text {{ font-size: {size}pt; {background} }}".encode())

    def on_preferences(self, *_):
        dialog = Preferences(self.window, load())
        if dialog.run() == Gtk.ResponseType.OK:
            settings = dialog.settings()
            save(settings)
            self.apply(settings)
        dialog.destroy()


if __name__ == "__main__":
    sys.exit(Jotter().run(sys.argv))
