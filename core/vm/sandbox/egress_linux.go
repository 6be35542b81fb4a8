package sandbox

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/config"
)

// Egress policy for internet mode (issue 15.6). slirp4netns is the only
// process of a sandbox in the host's network namespace, and it runs as the
// sandbox account's uid, whose other processes all live in sandboxes'
// own network namespaces. So an nftables output chain that matches that
// uid (meta skuid) filters exactly what the guests send out. It is
// programmed over netlink with github.com/google/nftables (no nft binary),
// in a table of Hivecrew's own ("hivecrew", family inet), one chain per
// uid, rebuilt atomically at every internet-mode start.
//
// Refused: every address of the host itself (fib daddr type local, so
// addresses added later are covered too), loopback, link-local
// (169.254.0.0/16 with cloud metadata, fe80::/10), the private ranges
// (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7), multicast and
// broadcast. Allowed before that: DNS (port 53) to the resolvers of the
// host's /etc/resolv.conf, which slirp4netns forwards the guest's queries
// to and which may well be private. Refusals answer with an ICMP
// "administratively prohibited", so guests fail fast.

// egressTable is Hivecrew's nftables table.
var egressTable = &nftables.Table{Name: "hivecrew", Family: nftables.TableFamilyINet}

// resolvers returns the name servers of /etc/resolv.conf.
func resolvers() []net.IP {
	f, err := os.Open("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []net.IP
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) >= 2 && fs[0] == "nameserver" {
			if ip := net.ParseIP(fs[1]); ip != nil {
				out = append(out, ip)
			}
		}
	}
	return out
}

// egressChain names uid's chain.
func egressChain(uid int) string { return fmt.Sprintf("egress-%d", uid) }

// daddrIn matches a destination address inside n (the IP version checked
// first).
func daddrIn(n *net.IPNet) []expr.Any {
	proto, off, ip, mask := byte(unix.NFPROTO_IPV4), uint32(16), n.IP.To4(), []byte(n.Mask)
	if ip == nil || len(mask) == net.IPv6len {
		proto, off, ip = unix.NFPROTO_IPV6, 24, n.IP.To16()
		if len(mask) == net.IPv4len {
			mask = append(net.CIDRMask(96, 128)[:12], mask...)
		}
	}
	l := uint32(len(ip))
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: l},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: l, Mask: mask, Xor: make([]byte, l)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip.Mask(n.Mask)},
	}
}

// applyEgress installs (or replaces) the egress policy for the processes
// of uid in the host's network namespace. allow are destinations let
// through although they are refused otherwise.
func applyEgress(uid int, allow []*net.IPNet) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("egress policy: %w", err)
	}
	c.AddTable(egressTable)
	ch := c.AddChain(&nftables.Chain{
		Name: egressChain(uid), Table: egressTable, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter,
	})
	c.FlushChain(ch)
	who := []expr.Any{
		&expr.Meta{Key: expr.MetaKeySKUID, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(uint32(uid))},
	}
	rule := func(e ...expr.Any) {
		c.AddRule(&nftables.Rule{Table: egressTable, Chain: ch, Exprs: append(append([]expr.Any{}, who...), e...)})
	}
	accept := &expr.Verdict{Kind: expr.VerdictAccept}
	for _, n := range allow {
		rule(append(daddrIn(n), accept)...)
	}
	for _, r := range resolvers() {
		for _, l4 := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
			rule(append(daddrIn(config.HostNet(r)),
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{l4}},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(53)},
				accept)...)
		}
	}
	reject := &expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED}
	// Every address of the host, whatever interface it is on.
	rule(&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
		reject)
	rule(&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_BROADCAST)},
		reject)
	for _, s := range config.RefusedNets {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return err
		}
		rule(append(daddrIn(n), reject)...)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("egress policy: program nftables: %w", err)
	}
	return nil
}
