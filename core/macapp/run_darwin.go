package macapp

import "github.com/progrium/darwinkit/macos/appkit"

// Run sets up the shared application: configure sets every handler on a
// fresh application delegate (applicationWillFinishLaunching: and
// applicationDidFinishLaunching: included), then the delegate is installed
// and AppKit's loop runs on the calling thread until the app stops. Call
// it on the main thread (lock it in an init function).
func Run(configure func(app appkit.Application, d *appkit.ApplicationDelegate)) {
	app := appkit.Application_SharedApplication()
	d := &appkit.ApplicationDelegate{}
	configure(app, d)
	app.SetDelegate(d)
	app.Run()
}
