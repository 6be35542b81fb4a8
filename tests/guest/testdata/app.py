#!/usr/bin/python3
"""A GTK 3 test client for the guest agent's end-to-end tests.

It reports, one JSON object per line on stdout, what it receives:
  app.py clicks  an undecorated window over the whole screen that reports
                 button presses (with GTK's single/double/triple detection),
                 releases, motion with the first button held, and scroll
                 events, in root coordinates, with the modifier state.
  app.py form    a normal window with a text entry named "Message" and a
                 "Press me" button, reporting text changes, the entry's
                 selected text and clicks.
  app.py keys    a normal window that reports key presses and releases:
                 the keysym's name, the modifier state and the X server's
                 time in milliseconds.
"""
import json
import sys

import gi

gi.require_version("Gdk", "3.0")
gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402


def emit(**fields):
    print(json.dumps(fields), flush=True)


def clicks():
    win = Gtk.Window(type=Gtk.WindowType.POPUP)
    geometry = Gdk.Display.get_default().get_monitor(0).get_geometry()
    win.move(0, 0)
    win.resize(geometry.width, geometry.height)
    win.add_events(
        Gdk.EventMask.BUTTON_PRESS_MASK
        | Gdk.EventMask.BUTTON_RELEASE_MASK
        | Gdk.EventMask.BUTTON1_MOTION_MASK
        | Gdk.EventMask.SCROLL_MASK
    )
    kinds = {
        Gdk.EventType.BUTTON_PRESS: "single",
        Gdk.EventType._2BUTTON_PRESS: "double",
        Gdk.EventType._3BUTTON_PRESS: "triple",
    }

    def press(_w, ev):
        emit(event="press", x=ev.x_root, y=ev.y_root, button=ev.button, kind=kinds.get(ev.type, str(ev.type)),
             state=int(ev.state))

    def scroll(_w, ev):
        emit(event="scroll", direction=ev.direction.value_nick, x=ev.x_root, y=ev.y_root, state=int(ev.state))

    def release(_w, ev):
        emit(event="release", x=ev.x_root, y=ev.y_root, button=ev.button, state=int(ev.state))

    def motion(_w, ev):
        emit(event="drag-motion", x=ev.x_root, y=ev.y_root)

    win.connect("button-press-event", press)
    win.connect("button-release-event", release)
    win.connect("motion-notify-event", motion)
    win.connect("scroll-event", scroll)
    win.connect("map-event", lambda *_: emit(event="ready"))
    win.show_all()


def form():
    win = Gtk.Window(title="Hivecrew Test Form")
    win.set_default_size(500, 160)
    win.move(100, 100)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=12)
    box.set_border_width(20)
    entry = Gtk.Entry()
    entry.get_accessible().set_name("Message")
    button = Gtk.Button(label="Press me")
    entry.connect("changed", lambda e: emit(event="changed", text=e.get_text()))

    def selection(e, _prop):
        bounds = e.get_selection_bounds()
        emit(event="selection", text=e.get_chars(bounds[0], bounds[1]) if bounds else "")

    entry.connect("notify::selection-bound", selection)
    entry.connect("notify::cursor-position", selection)
    button.connect("clicked", lambda _b: emit(event="clicked", text=entry.get_text()))
    box.pack_start(entry, False, False, 0)
    box.pack_start(button, False, False, 0)
    win.add(box)
    win.connect("destroy", Gtk.main_quit)
    win.connect("map-event", lambda *_: emit(event="ready"))
    win.show_all()


def keys():
    win = Gtk.Window(title="Hivecrew Test Keys")
    win.set_default_size(600, 400)
    win.move(50, 50)

    def key(kind):
        def report(_w, ev):
            emit(event=kind, text=Gdk.keyval_name(ev.keyval), state=int(ev.state), time=ev.time)
            return True

        return report

    def mapped(w, _ev):
        # Without a window manager nothing gives the window the focus.
        w.get_window().focus(Gdk.CURRENT_TIME)
        emit(event="ready")

    win.connect("key-press-event", key("key-press"))
    win.connect("key-release-event", key("key-release"))
    win.connect("destroy", Gtk.main_quit)
    win.connect("map-event", mapped)
    win.show_all()


GLib.set_prgname("hivecrew-testapp")
GLib.set_application_name("Hivecrew Test App")
{"clicks": clicks, "form": form, "keys": keys}[sys.argv[1]]()
Gtk.main()
