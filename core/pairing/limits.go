package pairing

import (
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/time/rate"
)

// Rate is a token bucket: Burst requests at once, then one every Every.
type Rate struct {
	Every time.Duration
	Burst int
}

// The default limits of a client: five codes at once, then one every 12
// seconds; twenty polls at once, then two a second (Swift's client polls
// every 2 seconds).
const (
	requestEvery, requestBurst = 12 * time.Second, 5
	pollEvery, pollBurst       = 500 * time.Millisecond, 20
	// maxClients bounds the clients whose buckets are kept; past it
	// new clients are refused until old buckets have filled again.
	maxClients = 4096
	// forgetPast is how many clients are kept before full buckets are
	// dropped (a client with full buckets is as a new one).
	forgetPast = 256
)

// LimitError refuses a request past a limit.
type LimitError struct {
	// What was refused and why, in words.
	What string
	// RetryAfter is when asking again may succeed.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: try again in %s", e.What, e.RetryAfter.Round(time.Second).String())
}

// kind is what a client does: ask for a code or poll one.
type kind int

const (
	asking kind = iota
	polling
)

// limits are the clients' token buckets; the Book's mutex guards them.
type limits struct {
	requests, polls Rate
	clients         map[string]*buckets
}

type buckets struct {
	request, poll *rate.Limiter
}

func newLimits(requests, polls Rate) *limits {
	return &limits{requests: requests, polls: polls, clients: map[string]*buckets{}}
}

// allow takes a token of client's bucket for k at now, or says when to
// come back.
func (l *limits) allow(client string, k kind, now time.Time) error {
	c := l.clients[client]
	if c == nil {
		if len(l.clients) >= forgetPast {
			l.forget(now)
		}
		if len(l.clients) >= maxClients {
			return &LimitError{What: "too many devices ask to pair", RetryAfter: time.Minute}
		}
		c = &buckets{
			request: rate.NewLimiter(rate.Every(l.requests.Every), l.requests.Burst),
			poll:    rate.NewLimiter(rate.Every(l.polls.Every), l.polls.Burst),
		}
		l.clients[client] = c
	}
	lim, what := c.request, "too many pairing requests from this address"
	if k == polling {
		lim, what = c.poll, "this address polls its pairing too often"
	}
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return &LimitError{What: what, RetryAfter: time.Minute}
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return &LimitError{What: what, RetryAfter: d}
	}
	return nil
}

// forget drops the clients whose buckets are full.
func (l *limits) forget(now time.Time) {
	for k, c := range l.clients {
		if c.request.TokensAt(now) >= float64(l.requests.Burst) && c.poll.TokensAt(now) >= float64(l.polls.Burst) {
			delete(l.clients, k)
		}
	}
}

// AddrOf is the exact address a request came from (remoteAddr is
// http.Request.RemoteAddr): an IPv4-mapped IPv6 address is its IPv4
// address, an IPv6 zone is kept. It is false when remoteAddr names no IP
// address (the unix socket).
func AddrOf(remoteAddr string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		return ap.Addr().Unmap(), true
	}
	a, err := netip.ParseAddr(remoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// clientOf is who sent a request from addr, for the limits: its IPv4
// address, or its IPv6 /64 (one machine is usually given a whole /64).
func clientOf(addr netip.Addr) string {
	if !addr.IsValid() {
		return "local"
	}
	addr = addr.Unmap()
	if addr.Is4() {
		return addr.String()
	}
	p, _ := addr.WithZone("").Prefix(64)
	return p.String()
}
