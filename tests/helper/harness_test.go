// Package helper tests the helper as users run it: the real
// hivecrew-helper process with real sandbox guests, the hivecrew CLI, and a
// scripted OpenAI-compatible provider (the only fake).
package helper

import (
	"testing"

	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/helperproc"
)

var bin string

func TestMain(m *testing.M) { helperproc.Main(m, &bin) }

// newHome returns a fresh, short data directory.
func newHome(t *testing.T) string { return daemontest.NewHome(t) }

// startHelper starts the hivecrew-helper process on home and waits for its
// banner; when the test ends it is stopped and nothing of its sandboxes
// may stay mounted (see helperproc.Start).
func startHelper(t *testing.T, home string) *helperproc.Proc {
	t.Helper()
	p := helperproc.Start(t, bin, home)
	p.NoMountsAtEnd(t)
	return p
}

func terminal(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() }
