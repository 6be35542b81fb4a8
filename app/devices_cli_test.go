package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
)

// TestDevicesCommands: a device asks to pair over HTTP, through the
// machine's network address (pairing is refused from loopback); the CLI
// lists it (code, address, a printable user agent), approves it by the
// code as shown, lists the paired device and revokes it, which ends its
// session.
func TestDevicesCommands(t *testing.T) {
	t.Parallel()
	h := startNetHelper(t)
	ip, _, _ := strings.Cut(h.addr, ":")
	base := "http://" + h.addr + "/api/v1/auth"
	req, _ := http.NewRequest("POST", base+"/pair/request", nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (Linux; Android 15) Chrome/140.0 Mobile \u202eevil")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var p wire.PairingRequest
	json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("pair/request: %d", resp.StatusCode)
	}

	pending := h.ok("devices", "pending").stdout
	if !regexp.MustCompile(`(?m)^`+p.Code+`\s+Chrome on Android\s+`+regexp.QuoteMeta(ip)+`\s+\d+s ago\s+in (4m5\ds|5m0s)\s+Mozilla/5\.0 .*Mobile \\u202eevil$`).MatchString(pending) || strings.Contains(pending, "\u202e") {
		t.Fatalf("devices pending:\n%s", pending)
	}
	if r := h.cli("devices", "approve", "000000"); r.code != 1 || !strings.Contains(r.stderr, "no device waits with the pairing code") {
		t.Fatalf("approving a code no device shows: %s", r)
	}
	r := h.ok("devices", "approve", p.Code[:3]+" "+p.Code[3:])
	if !strings.Contains(r.stdout, "Approved Chrome on Android (code "+p.Code+")") {
		t.Fatalf("devices approve: %s", r)
	}
	if r := h.ok("devices", "pending"); !strings.Contains(r.stdout, "No device asks to pair.") {
		t.Fatalf("pending after approval: %s", r)
	}

	resp, err = http.Get(base + "/pair/status?id=" + p.PairingID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("no session after approval: %d %v", resp.StatusCode, cookies)
	}
	read := func() int {
		req, _ := http.NewRequest("GET", "http://"+h.addr+"/api/v1/tasks", nil)
		req.AddCookie(cookies[0])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := read(); got != 200 {
		t.Fatalf("the paired device reads: %d", got)
	}

	var list wire.DeviceList
	decodeOne(t, h.ok("devices", "ls", "--json").stdout, &list)
	if len(list.Devices) != 1 || list.Devices[0].Name != "Chrome on Android" {
		t.Fatalf("devices ls --json: %+v", list)
	}
	if list.Devices[0].Address != ip {
		t.Fatalf("devices ls --json: the address %q; want %s, where it paired from", list.Devices[0].Address, ip)
	}
	if ls := h.ok("devices", "ls").stdout; !regexp.MustCompile(regexp.QuoteMeta(list.Devices[0].ID) + `\s+Chrome on Android\s+` + regexp.QuoteMeta(ip) + `\s`).MatchString(ls) {
		t.Fatalf("devices ls:\n%s", ls)
	}
	if r := h.ok("devices", "rm", list.Devices[0].ID); !strings.Contains(r.stdout, "its session has ended") {
		t.Fatalf("devices rm: %s", r)
	}
	if got := read(); got != 401 {
		t.Fatalf("the revoked device reads: %d; want 401", got)
	}
	if r := h.ok("devices", "ls"); !strings.Contains(r.stdout, "No paired devices.") {
		t.Fatalf("devices ls after rm: %s", r)
	}
}
