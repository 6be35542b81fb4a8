package desktop

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
)

// trayAnswersPairing: a device that asks to pair (through the machine's
// network address: h listens there, as pairing is refused from loopback)
// shows in the tray with its code and is notified; the tray's Approve
// signs it in, its Deny refuses another, and an answered one leaves the
// menu. (Part of TestTrayMenuOverDBus: the tray runs once in a process.)
func trayAnswersPairing(t *testing.T, h *daemontest.Helper, tr *tray) {
	ask := func(ua string) wire.PairingRequest {
		req, _ := http.NewRequest("POST", "http://"+h.Addr+"/api/v1/auth/pair/request", nil)
		req.Header.Set("User-Agent", ua)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p wire.PairingRequest
		if resp.StatusCode != 201 || json.NewDecoder(resp.Body).Decode(&p) != nil {
			t.Fatalf("pair/request: %d", resp.StatusCode)
		}
		return p
	}
	poll := func(p wire.PairingRequest) (string, []*http.Cookie) {
		resp, err := http.Get("http://" + h.Addr + "/api/v1/auth/pair/status?id=" + p.PairingID)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st wire.PairingStatus
		json.NewDecoder(resp.Body).Decode(&st)
		return st.Status, resp.Cookies()
	}
	// answer waits for the entry of p's code and clicks its child labelled
	// action.
	answer := func(p wire.PairingRequest, device, action string) {
		t.Helper()
		label := "Pair " + device + "? Code " + p.Code[:3] + " " + p.Code[3:]
		deadline := time.Now().Add(10 * time.Second)
		for {
			entries := tr.read()
			for i, e := range entries {
				if !e.visible || e.label != label {
					continue
				}
				for _, c := range entries[i+1:] {
					if c.depth <= e.depth {
						break
					}
					if c.label == action {
						click(t, tr.menu, c.id)
						return
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the tray shows no entry %q", label)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	phone := ask("Mozilla/5.0 (Android 15; Mobile; rv:140.0) Gecko/140.0 Firefox/140.0")
	answer(phone, "Firefox on Android", "Approve")
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, cookies := poll(phone)
		if status == "approved" && len(cookies) == 1 && strings.HasPrefix(cookies[0].Value, "hcd_") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the device approved in the tray: %s %v", status, cookies)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := "Firefox on Android asks to pair: Code " + phone.Code[:3] + " " + phone.Code[3:] + ", from " + strings.Split(h.Addr, ":")[0] + "."
	if !strings.Contains(tr.notes.all(), want) {
		t.Fatalf("notifications %q; want %q", tr.notes.all(), want)
	}

	laptop := ask("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36")
	answer(laptop, "Chrome on Linux", "Deny")
	deadline = time.Now().Add(5 * time.Second)
	for {
		status, cookies := poll(laptop)
		if status == "rejected" && len(cookies) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the device denied in the tray: %s %v", status, cookies)
		}
		time.Sleep(50 * time.Millisecond)
	}
	deadline = time.Now().Add(5 * time.Second)
	for containsLabel(tr.read(), "Code ") {
		if time.Now().After(deadline) {
			t.Fatal("an answered pairing is still in the tray")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ds, err := h.Unix.Devices(t.Context()); err != nil || len(ds) != 1 || ds[0].Name != "Firefox on Android" {
		t.Fatalf("paired devices: %+v, %v", ds, err)
	}
}
