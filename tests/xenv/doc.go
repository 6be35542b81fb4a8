// Package xenv starts a real X desktop for end-to-end tests and benchmarks:
// the guest agent's own desktop session (Xvfb, a private D-Bus session bus,
// openbox), with a private HOME, and a process group for the test's own X
// clients, killed at cleanup.
package xenv
