package reveal

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

// settle is how long Desktop waits for the opener to fail before taking
// it as started (xdg-open may wait for the program it starts).
const settle = 2 * time.Second

// Desktop is the desktop's opener on goos: open on macOS, xdg-open
// elsewhere. It fails when the opener fails at once (no desktop session,
// no application for the file); the opener keeps running on its own
// otherwise, reaped when it ends.
func Desktop(goos string) Launch {
	name := "xdg-open"
	if goos == "darwin" {
		name = "open"
	}
	return func(ctx context.Context, path string) error {
		cmd := exec.Command(name, path) // path is absolute: never an option
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("open %s (%s): %w", path, name, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }() // ends with the opener
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("open %s (%s): %w (is there a desktop session with an application for it?)", path, name, err)
			}
		case <-time.After(settle):
		case <-ctx.Done():
		}
		return nil
	}
}
