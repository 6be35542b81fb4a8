package daemontest

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/hivecrew/hivecrew/core/daemon"
)

// StartOnNetwork runs a helper (see Start) that listens on this machine's
// network address (NetworkIP) with remote access on, as the helper a
// phone or another computer pairs with: pairing is refused from
// loopback.
func StartOnNetwork(t testing.TB, mutate func(*daemon.Config)) *Helper {
	t.Helper()
	ip := NetworkIP(t)
	h := Start(t, func(c *daemon.Config) {
		c.Addr = net.JoinHostPort(ip.String(), "0")
		if mutate != nil {
			mutate(c)
		}
	})
	if _, err := h.Unix.PatchSettings(context.Background(), map[string]any{"allowRemoteAccess": true}); err != nil {
		t.Fatalf("turn remote access on: %v", err)
	}
	return h
}

// NetworkIP is an IPv4 address of this machine that is not loopback (the
// first of an interface that is up), for tests of what is refused from
// loopback. A machine with none fails the test: such a test cannot run
// there.
func NetworkIP(t testing.TB) netip.Addr {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatalf("network interfaces: %v", err)
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
				return p.Addr()
			}
		}
	}
	t.Fatal("this machine has no IPv4 address but loopback: a device pairs through the helper's network address, and this test needs one")
	return netip.Addr{}
}
