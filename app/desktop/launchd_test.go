package desktop

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeLaunchd plays launchd for replaceLaunchAgent: after a bootout the
// old job lingers for linger more `print` calls, and a bootstrap while it
// lingers fails with launchd's "5: Input/output error" (what a bootstrap
// right after a bootout meets on a real Mac).
type fakeLaunchd struct {
	loaded bool
	linger int
	calls  []string
}

func (f *fakeLaunchd) run(args ...string) ([]byte, error) {
	f.calls = append(f.calls, args[0])
	switch args[0] {
	case "print":
		if f.loaded {
			if f.linger > 0 && slices.Contains(f.calls, "bootout") {
				f.linger--
				if f.linger == 0 {
					f.loaded = false
				}
			}
			return []byte("state = running"), nil
		}
		return []byte("Could not find service"), errors.New("exit status 113")
	case "bootout":
		if !f.loaded {
			return []byte("Boot-out failed: 3: No such process"), errors.New("exit status 3")
		}
		if f.linger == 0 {
			f.loaded = false
		}
		return nil, nil
	case "bootstrap":
		if f.loaded {
			return []byte("Bootstrap failed: 5: Input/output error"), errors.New("exit status 5")
		}
		f.loaded = true
		return nil, nil
	}
	return nil, errors.New("unexpected launchctl " + args[0])
}

// TestReplaceLaunchAgentWaitsForBootout answers issue 16.8 (bootout then
// bootstrap at once races): the bootstrap waits until launchd has let the
// old job go, instead of failing and leaving no helper.
func TestReplaceLaunchAgentWaitsForBootout(t *testing.T) {
	f := &fakeLaunchd{loaded: true, linger: 5}
	var slept time.Duration
	err := replaceLaunchAgent(f.run, "gui/501", HelperLabel, "/p.plist", 10*time.Second, func(d time.Duration) { slept += d })
	if err != nil {
		t.Fatalf("replace: %v (calls %v)", err, f.calls)
	}
	if !f.loaded || f.calls[len(f.calls)-1] != "bootstrap" || slept == 0 {
		t.Fatalf("calls %v, slept %v", f.calls, slept)
	}
	if n := strings.Count(strings.Join(f.calls, " "), "bootstrap"); n != 1 {
		t.Fatalf("bootstrapped %d times while the old job lingered: %v", n, f.calls)
	}

	// Nothing loaded: no bootout, one bootstrap.
	f = &fakeLaunchd{}
	if err := replaceLaunchAgent(f.run, "gui/501", HelperLabel, "/p.plist", time.Second, func(time.Duration) {}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.calls, " ") != "print bootstrap" {
		t.Fatalf("calls %v", f.calls)
	}

	// A job that never goes away is an error that says so, within the wait.
	f = &fakeLaunchd{loaded: true, linger: 1 << 30}
	err = replaceLaunchAgent(f.run, "gui/501", HelperLabel, "/p.plist", time.Second, func(time.Duration) {})
	if err == nil || !strings.Contains(err.Error(), "still loaded") {
		t.Fatalf("stuck job: %v", err)
	}
}

// TestReplaceLaunchAgentReportsOtherFailures: a bootstrap error that is not
// "busy" (a broken plist) is reported at once with launchctl's words.
func TestReplaceLaunchAgentReportsOtherFailures(t *testing.T) {
	calls := 0
	run := func(args ...string) ([]byte, error) {
		calls++
		if args[0] == "print" {
			return nil, errors.New("exit status 113")
		}
		return []byte("Bootstrap failed: 122: Path had bad ownership/permissions"), errors.New("exit status 122")
	}
	err := replaceLaunchAgent(run, "gui/501", HelperLabel, "/p.plist", 10*time.Second, func(time.Duration) {})
	if err == nil || !strings.Contains(err.Error(), "bad ownership") || calls != 2 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

// TestHelperServiceArgs answers issue 16.1: the helper's LaunchAgent names
// the guest agent the app found, so `templates setup` has one.
func TestHelperServiceArgs(t *testing.T) {
	got := HelperServiceArgs("/A/Hivecrew.app/Contents/Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-helper", "/A/Hivecrew.app/Contents/Resources/hivecrew-guestagent")
	want := []string{"/A/Hivecrew.app/Contents/Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-helper", "serve", "--guest-agent", "/A/Hivecrew.app/Contents/Resources/hivecrew-guestagent"}
	if !slices.Equal(got, want) {
		t.Fatalf("args = %q", got)
	}
	if got := HelperServiceArgs("/h", ""); !slices.Equal(got, []string{"/h", "serve"}) {
		t.Fatalf("args without agent = %q", got)
	}
	plist := LaunchAgentPlist(HelperLabel, want, true, "")
	if !strings.Contains(plist, "<string>--guest-agent</string>\n\t\t<string>/A/Hivecrew.app/Contents/Resources/hivecrew-guestagent</string>") {
		t.Fatalf("plist:\n%s", plist)
	}
}
