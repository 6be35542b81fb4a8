//go:build !linux && !darwin

package main

import "io"

// terminalWidth reports no terminal where the CLI cannot ask.
func terminalWidth(io.Writer) (int, bool) { return 0, false }
