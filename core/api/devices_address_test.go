package api_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/mcpclient"
)

// loopback is the address every program of this machine shares.
var loopback = netip.MustParseAddr("127.0.0.1")

// TestPairingRefusedFromLoopback: every program of the helper's machine
// shares loopback, so a device paired from it would have a cookie that is
// its whole key. Asking from loopback (to a helper on loopback or on the
// network address) or over the unix socket is refused, saying what to do
// instead, and no code waits.
func TestPairingRefusedFromLoopback(t *testing.T) {
	ctx := context.Background()
	onLoopback := startHelper(t, nil)
	onNet := startNetHelper(t, nil)
	overUnix := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", onLoopback.paths.Socket())
	}}}
	for _, c := range []struct {
		what string
		ask  func() (int, string)
		want string
	}{
		{"a helper on loopback", func() (int, string) {
			status, body, _ := onLoopback.bare(nil, "POST", "/api/v1/auth/pair/request", "", "User-Agent", iPhone)
			return status, body
		}, "loopback address (127.0.0.1)"},
		{"the network address, asked from loopback", func() (int, string) {
			status, body, _ := onNet.bareFrom(loopback, nil, "POST", "/api/v1/auth/pair/request", "", "User-Agent", iPhone)
			return status, body
		}, "loopback address (127.0.0.1)"},
		{"the unix socket", func() (int, string) {
			status, body, _ := onLoopback.send(overUnix, nil, "POST", "/api/v1/auth/pair/request", "", "User-Agent", iPhone)
			return status, body
		}, "over the network"},
	} {
		status, body := c.ask()
		var e wire.Error
		if status != http.StatusForbidden || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "forbidden" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("pairing through %s: %d %s; want 403 forbidden saying %q", c.what, status, body, c.want)
			continue
		}
		if c.want == "over the network" {
			continue
		}
		for _, instead := range []string{"`hivecrew open`", "API key", "network address"} {
			if !strings.Contains(e.Error.Message, instead) {
				t.Errorf("pairing through %s: %q does not say what to do instead (%s)", c.what, e.Error.Message, instead)
			}
		}
	}
	for _, h := range []*helper{onLoopback, onNet} {
		if ps, err := h.unix.Pairings(ctx); err != nil || len(ps) != 0 {
			t.Fatalf("codes waiting after refused requests: %+v, %v", ps, err)
		}
	}
	// The helper's network address itself pairs.
	if p := askToPair(t, onNet, iPhone); p.Code == "" {
		t.Fatal("no code from the network address")
	}
}

// TestPollFromAnotherAddress: a pairing's poll from an address other than
// the one it was asked from is refused, before and after its approval,
// and gets no session; the device's own poll then does.
func TestPollFromAnotherAddress(t *testing.T) {
	h := startNetHelper(t, nil)
	ctx := context.Background()
	p := askToPair(t, h, iPhone)
	pending, err := h.unix.Pairings(ctx)
	if err != nil || len(pending) != 1 || pending[0].Address != h.ip().String() {
		t.Fatalf("the desktop's list: %+v, %v; want the address %s", pending, err, h.ip())
	}
	stolen := func(when string) {
		t.Helper()
		status, body, hdr := h.bareFrom(loopback, nil, "GET", "/api/v1/auth/pair/status?id="+p.PairingID, "")
		var e wire.Error
		json.Unmarshal([]byte(body), &e)
		if status != http.StatusForbidden || e.Error.Code != "forbidden" || !strings.Contains(e.Error.Message, "another network address") || hdr.Get("Set-Cookie") != "" {
			t.Fatalf("a poll from 127.0.0.1 %s: %d %s %v; want 403 and no session", when, status, body, hdr.Values("Set-Cookie"))
		}
	}
	stolen("while it waits")
	if status, st, _ := poll(t, h, p.PairingID); status != 200 || st.Status != "pending" {
		t.Fatalf("the device's poll after another address polled: %d %+v", status, st)
	}
	if _, err := h.unix.ApprovePairing(ctx, p.Code); err != nil {
		t.Fatal(err)
	}
	stolen("after its approval")
	if ds, _ := h.unix.Devices(ctx); len(ds) != 0 {
		t.Fatalf("devices after a poll from another address: %+v", ds)
	}
	status, st, cookie := poll(t, h, p.PairingID)
	if status != 200 || st.Status != "approved" || cookie == nil {
		t.Fatalf("the device's poll after its approval: %d %+v %v", status, st, cookie)
	}
}

// TestDeviceCookieReplayedElsewhere: browsers send a host's cookies to
// every port of it, so a program on another port of the helper's host
// can receive a device's cookie. Replayed from any address but the
// device's, with every header a page of this site sends, it is refused
// (401, saying why), on the REST routes and on MCP; it cannot sign the
// device out; and the device's own session goes on.
func TestDeviceCookieReplayedElsewhere(t *testing.T) {
	h := startNetHelper(t, nil)
	ctx := context.Background()
	cookie := pair(t, h, iPhone)
	origin := []string{"Origin", "http://" + h.addr, "Sec-Fetch-Site", "same-origin"}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + mcpclient.Protocol + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	mcpHdr := append([]string{"Accept", "application/json, text/event-stream"}, origin...)
	for _, r := range []struct{ what, method, path, body string }{
		{"read the tasks", "GET", "/api/v1/tasks", ""},
		{"start a task", "POST", "/api/v1/tasks", `{"description":"Replayed"}`},
		{"list the devices", "GET", "/api/v1/auth/devices", ""},
		{"sign the device out", "POST", "/api/v1/auth/logout", ""},
		{"talk MCP", "POST", "/api/v1/mcp", initialize},
	} {
		status, body, _ := h.bareFrom(loopback, cookie, r.method, r.path, r.body, mcpHdr...)
		var e wire.Error
		json.Unmarshal([]byte(body), &e)
		if status != http.StatusUnauthorized || e.Error.Code != "unauthorized" || !strings.Contains(e.Error.Message, "paired from another network address") {
			t.Errorf("the cookie from 127.0.0.1 may %s: %d %s; want 401", r.what, status, body)
		}
	}
	status, body, _ := h.bareFrom(loopback, cookie, "GET", "/api/v1/auth/check", "", origin...)
	if status != 200 || !strings.Contains(body, `"authenticated":false`) {
		t.Errorf("GET /auth/check with the cookie from 127.0.0.1: %d %s; want not authenticated", status, body)
	}
	if tasks, err := h.unix.ListTasks(ctx, client.TaskQuery{}); err != nil || len(tasks.Tasks) != 0 {
		t.Fatalf("tasks after the replays: %+v, %v", tasks, err)
	}

	// The device goes on, where it was paired from.
	ds, err := h.unix.Devices(ctx)
	if err != nil || len(ds) != 1 || ds[0].Address != h.ip().String() {
		t.Fatalf("devices after the replays: %+v, %v; want the device, at %s", ds, err, h.ip())
	}
	if status, body, _ := h.bare(cookie, "GET", "/api/v1/tasks", ""); status != 200 {
		t.Fatalf("the device after its cookie was replayed: %d %s", status, body)
	}
	if status, body, _ := h.bare(cookie, "POST", "/api/v1/mcp", initialize, mcpHdr...); status != 200 || !strings.Contains(body, "protocolVersion") {
		t.Fatalf("the device's MCP initialize from this site: %d %s", status, body)
	}
	// MCP is strict: even a read needs the sign of this site.
	if status, body, _ := h.bare(cookie, "POST", "/api/v1/mcp", initialize, "Accept", "application/json, text/event-stream"); status != http.StatusForbidden {
		t.Fatalf("the device's MCP initialize with no sign of its site: %d %s; want 403", status, body)
	}
	if status, body, _ := h.bare(cookie, "GET", "/api/v1/mcp", "", "Accept", "text/event-stream"); status != http.StatusForbidden {
		t.Fatalf("the device's MCP stream with no sign of its site: %d %s; want 403", status, body)
	}
}
