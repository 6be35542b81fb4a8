package pairing

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// clock is a settable time.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }

func newBook(t *testing.T) (*Book, *clock) {
	t.Helper()
	c := &clock{now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	return New(Config{Now: c.Now}), c
}

func TestApprovedPairingIsHandedOverOnce(t *testing.T) {
	b, c := newBook(t)
	chrome := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36"
	p, err := b.Request(ip("10.0.0.5"), chrome)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9]{6}$`).MatchString(p.Code) || len(p.ID) < 32 || p.Status != Pending {
		t.Fatalf("new pairing %+v: want a six-digit code, a long secret id, pending", p)
	}
	if p.DeviceName != "Chrome on Linux" || p.UserAgent != chrome || !p.ExpiresAt.Equal(c.now.Add(DefaultTTL)) {
		t.Fatalf("new pairing %+v", p)
	}
	pending := b.Pending()
	if len(pending) != 1 || pending[0].Code != p.Code {
		t.Fatalf("pending %+v", pending)
	}
	if got, _ := b.Status(ip("10.0.0.5"), p.ID); got.Status != Pending {
		t.Fatalf("status before the answer: %s", got.Status)
	}
	until := c.now.Add(10 * time.Minute)
	if _, err := b.Approve(p.Code[:3]+" "+p.Code[3:], until); err != nil {
		t.Fatalf("approve %q with a space: %v", p.Code, err)
	}
	if len(b.Pending()) != 0 {
		t.Fatal("an approved pairing is still pending")
	}
	got, err := b.Status(ip("10.0.0.5"), p.ID)
	if err != nil || got.Status != Approved || !got.StepUpUntil.Equal(until) {
		t.Fatalf("status after approval: %+v, %v", got, err)
	}
	if _, err := b.Status(ip("10.0.0.5"), p.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("an approved pairing answered twice (its session would be handed out twice): %v", err)
	}
	if _, err := b.Approve(p.Code, until); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("approving a used code again: %v", err)
	}
}

func TestDeniedAndExpiredCodes(t *testing.T) {
	b, c := newBook(t)
	denied, _ := b.Request(ip("10.0.0.5"), "curl/8")
	late, _ := b.Request(ip("10.0.0.6"), "curl/8")
	if _, err := b.Deny(denied.Code); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Status(ip("10.0.0.5"), denied.ID); got.Status != Rejected {
		t.Fatalf("denied pairing: %s", got.Status)
	}
	if _, err := b.Approve(denied.Code, c.now); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("approving a denied code: %v", err)
	}
	c.advance(DefaultTTL)
	if got, _ := b.Status(ip("10.0.0.6"), late.ID); got.Status != Expired {
		t.Fatalf("a code past its time: %s", got.Status)
	}
	if _, err := b.Approve(late.Code, c.now); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("approving an expired code: %v", err)
	}
	if len(b.Pending()) != 0 {
		t.Fatal("an expired code is still pending")
	}
	c.advance(linger + time.Second)
	for _, p := range []Pairing{denied, late} {
		if _, err := b.Status(p.Addr, p.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("pairing %s a minute after it expired: %v", p.Code, err)
		}
	}
	if _, err := b.Status(ip("10.0.0.5"), "forged"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("an unknown id: %v", err)
	}
}

func TestRequestsAreLimitedPerClient(t *testing.T) {
	b, c := newBook(t)
	var codes []string
	for i := range requestBurst {
		p, err := b.Request(ip("10.0.0.5"), "curl/8")
		if err != nil {
			t.Fatalf("request %d of the burst: %v", i+1, err)
		}
		codes = append(codes, p.Code)
		c.advance(time.Millisecond) // oldest first, as in life
	}
	_, err := b.Request(ip("10.0.0.5"), "curl/8")
	var le *LimitError
	if !errors.As(err, &le) || le.RetryAfter <= 0 || le.RetryAfter > requestEvery {
		t.Fatalf("a request past the burst: %v", err)
	}
	// Another client is not held back by this one.
	if _, err := b.Request(ip("10.0.0.6"), "curl/8"); err != nil {
		t.Fatalf("another client: %v", err)
	}
	// One client holds at most three codes: the oldest give way.
	mine := 0
	for _, p := range b.Pending() {
		if p.Client == "10.0.0.5" {
			mine++
			if p.Code == codes[0] || p.Code == codes[1] {
				t.Fatalf("code %s of the first two requests still pending", p.Code)
			}
		}
	}
	if mine != perClientPending {
		t.Fatalf("%d codes of one client pending; want %d", mine, perClientPending)
	}
	c.advance(requestEvery)
	if _, err := b.Request(ip("10.0.0.5"), "curl/8"); err != nil {
		t.Fatalf("a request once the bucket refilled: %v", err)
	}
}

func TestPollsAreLimitedAndCodesCounted(t *testing.T) {
	b, _ := newBook(t)
	p, _ := b.Request(ip("10.0.0.5"), "curl/8")
	for i := range pollBurst {
		if _, err := b.Status(ip("10.0.0.5"), p.ID); err != nil {
			t.Fatalf("poll %d: %v", i+1, err)
		}
	}
	var le *LimitError
	if _, err := b.Status(ip("10.0.0.5"), p.ID); !errors.As(err, &le) {
		t.Fatalf("a poll past the burst: %v", err)
	}
	// At most MaxPending codes wait, whoever asks.
	for i := 1; i < DefaultMaxPending; i++ {
		if _, err := b.Request(ip(fmt.Sprintf("10.0.1.%d", i)), "curl/8"); err != nil {
			t.Fatalf("code %d: %v", i+1, err)
		}
	}
	if _, err := b.Request(ip("10.0.2.1"), "curl/8"); !errors.As(err, &le) || !strings.Contains(err.Error(), "wait for an answer") {
		t.Fatalf("code %d: %v", DefaultMaxPending+1, err)
	}
}

func TestUserAgentIsShownSafely(t *testing.T) {
	b, _ := newBook(t)
	p, err := b.Request(ip("10.0.0.5"), "Evil\x1b[2K\u202eBrowser "+strings.Repeat("x", 1000))
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(p.UserAgent, "\x1b\u202e") || !strings.Contains(p.UserAgent, `\x1b[2K\u202eBrowser`) {
		t.Fatalf("user agent %q keeps control or formatting characters", p.UserAgent[:40])
	}
	if n := len([]rune(p.UserAgent)); n > maxUserAgent {
		t.Fatalf("user agent of %d characters", n)
	}
	if q, _ := b.Request(ip("10.0.0.6"), ""); q.UserAgent != "unknown" {
		t.Fatalf("no user agent: %q", q.UserAgent)
	}
}

func TestAddrOfAndClients(t *testing.T) {
	for in, want := range map[string][2]string{
		"192.168.1.20:51234":          {"192.168.1.20", "192.168.1.20"},
		"[::ffff:192.168.1.20]:51234": {"192.168.1.20", "192.168.1.20"},
		"[2001:db8:1:2:aaaa::1]:443":  {"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		"[2001:db8:1:2:bbbb::9]:80":   {"2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"},
		"[fe80::1%eth0]:80":           {"fe80::1%eth0", "fe80::/64"},
		"127.0.0.1:5482":              {"127.0.0.1", "127.0.0.1"},
	} {
		a, ok := AddrOf(in)
		if !ok || a.String() != want[0] || clientOf(a) != want[1] {
			t.Errorf("AddrOf(%q) = %v, %v (client %q); want %s (client %s)", in, a, ok, clientOf(a), want[0], want[1])
		}
	}
	for _, in := range []string{"@", "", "localhost:80"} {
		if a, ok := AddrOf(in); ok {
			t.Errorf("AddrOf(%q) = %v; want none (the unix socket)", in, a)
		}
	}
}

// TestPollFromAnotherAddress: only the address that asked may poll; a
// poll from another, even of the same IPv6 /64 or with the pairing's
// secret id, is refused and leaves the pairing (approved or not) to its
// device.
func TestPollFromAnotherAddress(t *testing.T) {
	b, _ := newBook(t)
	p, err := b.Request(ip("2001:db8:1:2::5"), "curl/8")
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != ip("2001:db8:1:2::5") {
		t.Fatalf("pairing address %v", p.Addr)
	}
	for _, other := range []string{"2001:db8:1:2::6", "192.0.2.2", "127.0.0.1"} {
		if _, err := b.Status(ip(other), p.ID); !errors.Is(err, ErrOtherAddress) {
			t.Fatalf("a poll from %s while pending: %v; want ErrOtherAddress", other, err)
		}
	}
	if _, err := b.Approve(p.Code, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Status(ip("2001:db8:1:2::6"), p.ID); !errors.Is(err, ErrOtherAddress) {
		t.Fatalf("a poll from another address after approval: %v; want ErrOtherAddress", err)
	}
	if got, err := b.Status(ip("2001:db8:1:2::5"), p.ID); err != nil || got.Status != Approved {
		t.Fatalf("the device's own poll after another address polled: %+v, %v; want approved", got, err)
	}
}

// ip is an address, as AddrOf returns it.
func ip(s string) netip.Addr { return netip.MustParseAddr(s).Unmap() }

func TestDescribe(t *testing.T) {
	for ua, want := range map[string]Kind{
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1": {"Safari", "iOS", "mobile"},
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36 Edg/140.0.0.0":     {"Edge", "macOS", "desktop"},
		"Mozilla/5.0 (Android 15; Mobile; rv:140.0) Gecko/140.0 Firefox/140.0":                                                                    {"Firefox", "Android", "mobile"},
		"Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/140.0 Mobile/15E148 Safari/604.1":           {"Chrome", "iPadOS", "tablet"},
		"unknown": {"A browser", "an unknown system", "desktop"},
	} {
		if got := Describe(ua); got != want {
			t.Errorf("Describe(%.40q) = %+v; want %+v", ua, got, want)
		}
	}
}
