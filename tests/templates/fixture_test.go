package templates

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/tests/helperproc"
)

// desktop is the helper the template tests share: it builds the
// linux-desktop template once, with the CLI, the way a user does
// (`hivecrew templates create linux-desktop`), and keeps running until the
// tests end. Builds take a minute; one per run is enough.
type desktop struct {
	once sync.Once
	err  error

	h    *helper
	home string
	// createOut and createErr are what `templates create` printed, took how
	// long it ran.
	createOut, createErr string
	took                 time.Duration
}

var shared desktop

// get returns the shared helper with the linux-desktop template built,
// or fails the test.
func (d *desktop) get(t *testing.T) *helper {
	t.Helper()
	d.once.Do(func() { d.err = d.setup() })
	if d.err != nil {
		if d.h != nil {
			t.Logf("shared helper log:\n%s", d.h.Logs())
		}
		t.Fatal(d.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared helper log (last 30000 bytes):\n%s", tail(d.h.Logs(), 30000))
		}
	})
	return d.h
}

func (d *desktop) setup() error {
	home, err := os.MkdirTemp("", "hcT")
	if err != nil {
		return err
	}
	d.home = home
	p, err := helperproc.Launch(bin, home)
	if err != nil {
		return err
	}
	h := &helper{p}
	d.h = h
	// No warm VMs (tasks get their own clones, slots stay free), no
	// network (faster, and none is needed).
	if _, err := h.Unix.PatchSettings(context.Background(), map[string]any{"warmPoolSize": 0, "maxConcurrentVMs": 3, "networkMode": "offline"}); err != nil {
		return err
	}
	started := time.Now()
	var cerr error
	d.createOut, d.createErr, cerr = h.cli("templates", "create", "linux-desktop")
	d.took = time.Since(started)
	if cerr != nil {
		return fmt.Errorf("hivecrew templates create linux-desktop: %v\nstdout:\n%s\nstderr:\n%s", cerr, d.createOut, d.createErr)
	}
	return nil
}

func (d *desktop) close() {
	if d.h != nil {
		if err := d.h.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "shared helper:", err)
		}
	}
	if d.home != "" {
		os.RemoveAll(d.home)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
