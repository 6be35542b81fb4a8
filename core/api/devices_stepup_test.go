package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
)

// TestPairedDeviceIsNeverAKey: a paired device's cookie is a session. Its
// step-up window runs from its approval; past it, the device can mint no
// key and give no task more than Settings give, as a login link's session
// cannot. Nor can it, or a stale web session, approve another device to
// get a fresh window: a device approved by a session ends its window when
// the approver's ends.
func TestPairedDeviceIsNeverAKey(t *testing.T) {
	h := startNetHelper(t, func(c *daemon.Config) { c.WebStepUp = stepUpWindow })
	h.addProvider()
	origin := []string{"Origin", "http://" + h.addr}
	// The approval happens between these two times.
	before := time.Now()
	phone := pair(t, h, iPhone)
	after := time.Now()

	// Soon after its approval, it may do what needs step-up.
	if status, body, _ := h.bare(phone, "POST", "/api/v1/apikeys", `{"name":"phone"}`, origin...); status != 201 {
		t.Fatalf("a key minted by a device just approved: %d %s", status, body)
	}
	// Late in its window it approves another device.
	laptop := askToPair(t, h, "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0")
	time.Sleep(time.Until(before.Add(stepUpWindow * 3 / 4)))
	if status, body, _ := h.bare(phone, "POST", "/api/v1/auth/pairings/"+laptop.Code+"/approve", "", origin...); status != 200 {
		t.Fatalf("a device approving another within its window: %d %s", status, body)
	}
	_, _, second := poll(t, h, laptop.PairingID)
	if second == nil {
		t.Fatal("the second device got no session")
	}
	// The first device's window ends; the second's ends with it.
	time.Sleep(time.Until(after.Add(stepUpWindow + 200*time.Millisecond)))
	third := askToPair(t, h, iPhone)
	folder, _ := json.Marshal([]string{t.TempDir()})
	for name, c := range map[string]*http.Cookie{"the device": phone, "the device it approved": second} {
		for _, r := range []struct{ what, method, path, body string }{
			{"mint a key", "POST", "/api/v1/apikeys", `{"name":"late"}`},
			{"give a task hosts past the egress policy", "POST", "/api/v1/tasks", `{"description":"Reach my NAS","allowHosts":["192.168.1.10"]}`},
			{"give a task a folder of this computer", "POST", "/api/v1/tasks", `{"description":"Read my photos","hostFolders":` + string(folder) + `}`},
			{"approve another device", "POST", "/api/v1/auth/pairings/" + third.Code + "/approve", ""},
			{"change the tool policy", "PATCH", "/api/v1/settings", `{"toolPolicy":{"run_shell":"allow"}}`},
		} {
			status, body, _ := h.bare(c, r.method, r.path, r.body, origin...)
			var e wire.Error
			json.Unmarshal([]byte(body), &e)
			if status != 403 || e.Error.Code != "step_up_required" || !strings.Contains(e.Error.Message, "paired device") {
				t.Errorf("%s, past its window, may %s: %d %s; want 403 step_up_required", name, r.what, status, body)
			}
		}
		// Within Settings it still works.
		if status, body, _ := h.bare(c, "POST", "/api/v1/tasks", `{"description":"Tidy the desktop"}`, origin...); status != 201 {
			t.Errorf("%s, past its window, starting a task within Settings: %d %s", name, status, body)
		}
	}
	if ps, _ := h.unix.Pairings(context.Background()); len(ps) != 1 || ps[0].Code != third.Code {
		t.Fatalf("the third pairing was answered by a stale device: %+v", ps)
	}

	// A stale web session cannot approve either; a fresh one can.
	s := staleSession(t, h)
	if status, body := s.do("POST", "/api/v1/auth/pairings/"+third.Code+"/approve", nil); status != 403 || !strings.Contains(body, "step_up_required") {
		t.Fatalf("a stale web session approving a device: %d %s", status, body)
	}
	if status, body := freshSession(t, h).do("POST", "/api/v1/auth/pairings/"+third.Code+"/approve", nil); status != 200 {
		t.Fatalf("a fresh web session approving a device: %d %s", status, body)
	}
}
