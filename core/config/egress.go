package config

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// Egress policy (issue 15.6): what an internet-mode VM may reach, and what
// the host's web tools fetch for an agent (issue 19.3). Refused unless the
// user's allowlist names it: every address of the host itself, loopback,
// link-local (with cloud metadata), the private and shared ranges,
// multicast and broadcast.

// RefusedNets are the destination ranges refused.
var RefusedNets = []string{
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
	"::/128", "::1/128", "::ffff:0:0/96", "fc00::/7", "fe80::/10", "ff00::/8",
}

// ResolveAllow turns allowlist entries (CIDRs, addresses or host names)
// into networks. Names are resolved once, here: a name whose addresses
// change later is not followed.
func ResolveAllow(entries []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if _, n, err := net.ParseCIDR(e); err == nil {
			out = append(out, n)
			continue
		}
		if ip := net.ParseIP(e); ip != nil {
			out = append(out, HostNet(ip))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", e)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("allowed host %q: %w", e, err)
		}
		for _, ip := range ips {
			out = append(out, HostNet(ip))
		}
	}
	return out, nil
}

// HostNet is the network of one address.
func HostNet(ip net.IP) *net.IPNet {
	if v4 := ip.To4(); v4 != nil {
		return &net.IPNet{IP: v4, Mask: net.CIDRMask(32, 32)}
	}
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(128, 128)}
}

// EgressRefused says why the host refuses to connect to ip for a guest
// ("" when it may): allow are the allowlist's networks.
func EgressRefused(ip net.IP, allow []*net.IPNet) string {
	for _, n := range allow {
		if n.Contains(ip) {
			return ""
		}
	}
	for _, s := range RefusedNets {
		_, n, _ := net.ParseCIDR(s)
		if n.Contains(ip) {
			return fmt.Sprintf("%s is in %s, which agents may not reach (Settings › egressAllowHosts can allow it)", ip, s)
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return fmt.Sprintf("%s is this computer's own address, which agents may not reach", ip)
			}
		}
	}
	return ""
}
