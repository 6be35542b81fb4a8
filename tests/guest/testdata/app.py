#!/usr/bin/python3
"""A GTK 3 test client for the guest agent's end-to-end tests.

It reports, one JSON object per line on stdout, what it receives:
  app.py clicks  an undecorated window over the whole screen that reports
                 button presses (with GTK's single/double/triple detection),
                 releases, motion with the first button held, and scroll
                 events, in root coordinates.
  app.py form    a normal window with a text entry named "Message" and a
                 "Press me" button, reporting text changes and clicks.
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
        emit(event="press", x=ev.x_root, y=ev.y_root, button=ev.button, kind=kinds.get(ev.type, str(ev.type)))

    def scroll(_w, ev):
        emit(event="scroll", direction=ev.direction.value_nick, x=ev.x_root, y=ev.y_root)

    def release(_w, ev):
        emit(event="release", x=ev.x_root, y=ev.y_root, button=ev.button)

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
    button.connect("clicked", lambda _b: emit(event="clicked", text=entry.get_text()))
    box.pack_start(entry, False, False, 0)
    box.pack_start(button, False, False, 0)
    win.add(box)
    win.connect("destroy", Gtk.main_quit)
    win.connect("map-event", lambda *_: emit(event="ready"))
    win.show_all()


GLib.set_prgname("hivecrew-testapp")
GLib.set_application_name("Hivecrew Test App")
{"clicks": clicks, "form": form}[sys.argv[1]]()
Gtk.main()
