//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach makes cmd outlive this process and its terminal: a new session
// (and so its own process group), out of reach of the terminal's Ctrl+C.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
