// Package macsetup drives a macOS VM's Setup Assistant, and the few steps
// after it, through the VM's own keyboard and screen, so that a macOS
// template is made without a person (`hivecrew templates create
// macos-15-base --unattended`), as cirruslabs' macos-image-templates do with
// Packer's boot commands.
//
// The VM's console is an RFB (VNC) server that the host's Virtualization
// framework serves for the VM (core/vm/vz); Client speaks the small part
// of RFB 3.8 this needs: password authentication, raw framebuffer updates,
// key and pointer events. Every message is bounded.
//
// A Script is a list of Steps. Before it acts, each step checks the screen:
// it waits until the screen has stopped changing and is not blank (pixel
// cues, no text), then reads its text with a Reader (Apple's Vision text
// recognition on the Mac; tests use a reader of their own on synthetic
// frames) and looks for the step's phrases. A screen that is not the one
// expected stops the run with a ScreenError that says what was expected,
// what the screen said, and where its screenshot was saved.
//
// What has not been checked: the script's phrases and key sequences follow
// cirruslabs' published macOS 15 boot commands and Apple's English screen
// titles; they have not been run against real Setup Assistant screens, and
// no screenshot of one is recorded here.
package macsetup
