// Package pairing keeps the codes of devices that asked to sign in (a
// browser running the Swift Hivecrew app's web client, or anything built on
// its API) until the user answers them on the desktop.
//
// The contract: a device asks (Request) without credentials and gets a
// secret pairing id and a six-digit code, which it shows. The desktop lists
// the pending codes with the device's user agent and the time it asked
// (Pending); the user approves or denies one by its code (Approve, Deny),
// only when it is the code the device shows. The device polls with its id
// (Status): pending, rejected, expired, or approved, and an approved
// pairing is answered approved exactly once (the caller then hands the
// device its session) and is gone after that. A pairing belongs to the
// exact address it was asked from (Addr, shown on the desktop): a poll
// from any other address is refused with ErrOtherAddress and changes
// nothing, so the session goes to the address the user approved, and the
// caller binds it there. A code expires TTL after it
// was asked for; a rejected or expired pairing is still answered for a
// minute, then forgotten. Requests and polls are limited per client (an
// IPv4 address, or an IPv6 /64) by token buckets, a client holds at most
// three pending codes (asking for a fourth drops its oldest), and at most
// MaxPending codes wait at once. A Book holds nothing on disk: a restart
// forgets every pairing, and the devices ask again.
package pairing

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/redact"
)

// Status is where a pairing stands, in the words of Swift's API.
type Status string

// The statuses. Rejected is a pairing the user denied.
const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Rejected Status = "rejected"
	Expired  Status = "expired"
)

// Defaults of Config.
const (
	DefaultTTL        = 5 * time.Minute
	DefaultMaxPending = 20
	// perClientPending is how many codes one client may hold pending.
	perClientPending = 3
	// linger is how long a rejected, expired or unclaimed approved
	// pairing is still answered after its code expired.
	linger = time.Minute
	// maxUserAgent bounds the user agent kept, in characters.
	maxUserAgent = 300
)

// Pairing is one device's request to sign in.
type Pairing struct {
	// ID is the device's secret: whoever holds it receives the session
	// of an approved pairing. Only the device that asked is given it.
	ID string
	// Code is the six digits the device shows and the user compares.
	Code string
	// Addr is the exact address the device asked from (AddrOf): only it
	// may poll, and the device's session is bound to it.
	Addr netip.Addr
	// Client is who asked, for the limits: Addr, or its IPv6 /64.
	Client string
	// UserAgent is the device's, printable and at most 300 characters;
	// DeviceName is what it says in a few words ("Firefox on Android").
	UserAgent, DeviceName string
	Status                Status
	CreatedAt, ExpiresAt  time.Time
	// StepUpUntil, set by Approve, ends the step-up window of the
	// device's session.
	StepUpUntil time.Time
}

// Config configures a Book; every field is optional.
type Config struct {
	// TTL is how long a code waits for the user; default 5 minutes.
	TTL time.Duration
	// MaxPending caps the codes pending at once; default 20.
	MaxPending int
	// Requests and Polls limit each client's requests and status polls;
	// default five requests at once then one every 12 seconds, twenty
	// polls at once then two a second.
	Requests, Polls Rate
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Book holds the pairings. Its methods are safe for concurrent use.
type Book struct {
	cfg Config

	// mu guards pairings (by id) and limits.
	mu       sync.Mutex
	pairings map[string]*Pairing
	limits   *limits
}

// New returns an empty Book.
func New(cfg Config) *Book {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.Requests.Burst <= 0 || cfg.Requests.Every <= 0 {
		cfg.Requests = Rate{Every: requestEvery, Burst: requestBurst}
	}
	if cfg.Polls.Burst <= 0 || cfg.Polls.Every <= 0 {
		cfg.Polls = Rate{Every: pollEvery, Burst: pollBurst}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Book{cfg: cfg, pairings: map[string]*Pairing{}, limits: newLimits(cfg.Requests, cfg.Polls)}
}

// TTL is how long a code waits for the user.
func (b *Book) TTL() time.Duration { return b.cfg.TTL }

// ErrOtherAddress refuses a poll from an address other than the one the
// pairing was asked from.
var ErrOtherAddress = errors.New("this pairing was asked for from another network address")

// Request records a new pending pairing asked for from addr (AddrOf) with
// userAgent. It fails with a *LimitError when the client asks too often
// or too many codes wait. Which addresses may pair at all is the
// caller's to decide.
func (b *Book) Request(addr netip.Addr, userAgent string) (Pairing, error) {
	client := clientOf(addr)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	b.prune(now)
	if err := b.limits.allow(client, asking, now); err != nil {
		return Pairing{}, err
	}
	var mine []*Pairing
	pending := 0
	for _, p := range b.pairings {
		if p.Status == Pending {
			pending++
			if p.Client == client {
				mine = append(mine, p)
			}
		}
	}
	if len(mine) >= perClientPending {
		// A page reloaded asks again: its oldest code gives way.
		oldest := slices.MinFunc(mine, func(x, y *Pairing) int { return x.CreatedAt.Compare(y.CreatedAt) })
		oldest.Status, oldest.ExpiresAt = Expired, now
		pending--
	}
	if pending >= b.cfg.MaxPending {
		return Pairing{}, &LimitError{What: fmt.Sprintf("%d devices already wait for an answer on the desktop", pending), RetryAfter: b.cfg.TTL}
	}
	ua := printableUA(userAgent)
	p := &Pairing{ID: secretID(), Code: b.newCode(), Addr: addr, Client: client, UserAgent: ua, DeviceName: Describe(ua).Name(),
		Status: Pending, CreatedAt: now, ExpiresAt: now.Add(b.cfg.TTL)}
	b.pairings[p.ID] = p
	return *p, nil
}

// Status returns the pairing of id as its device, polling from addr,
// sees it. An approved pairing is returned once, and forgotten: the
// caller gives the device its session. An unknown or forgotten id is of
// class not found; a client polling too often gets a *LimitError; a poll
// from an address other than the pairing's is ErrOtherAddress, and the
// pairing stays as it was.
func (b *Book) Status(addr netip.Addr, id string) (Pairing, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	b.prune(now)
	if err := b.limits.allow(clientOf(addr), polling, now); err != nil {
		return Pairing{}, err
	}
	p, ok := b.pairings[id]
	if !ok {
		return Pairing{}, errdefs.NotFoundf("no such pairing: it expired, was answered, or never was (ask for a new code)")
	}
	if p.Addr != addr {
		return Pairing{}, ErrOtherAddress
	}
	if p.Status == Approved {
		delete(b.pairings, id)
	}
	return *p, nil
}

// Pending returns the pairings waiting for the user, oldest first.
func (b *Book) Pending() []Pairing {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(b.cfg.Now())
	var out []Pairing
	for _, p := range b.pairings {
		if p.Status == Pending {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(x, y Pairing) int { return x.CreatedAt.Compare(y.CreatedAt) })
	return out
}

// Approve approves the pending pairing of code (spaces and dashes in it
// are ignored); its device's session may change what needs step-up until
// stepUpUntil.
func (b *Book) Approve(code string, stepUpUntil time.Time) (Pairing, error) {
	return b.answer(code, func(p *Pairing) { p.Status, p.StepUpUntil = Approved, stepUpUntil })
}

// Deny refuses the pending pairing of code.
func (b *Book) Deny(code string) (Pairing, error) {
	return b.answer(code, func(p *Pairing) { p.Status = Rejected })
}

func (b *Book) answer(code string, set func(*Pairing)) (Pairing, error) {
	code = NormalizeCode(code)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(b.cfg.Now())
	for _, p := range b.pairings {
		if p.Code != code {
			continue
		}
		if p.Status != Pending {
			return Pairing{}, errdefs.Conflictf("the pairing code %s is %s, not waiting for an answer", code, p.Status)
		}
		set(p)
		return *p, nil
	}
	return Pairing{}, errdefs.NotFoundf("no device waits with the pairing code %q (codes expire after %s; `hivecrew devices pending` lists them)", code, b.cfg.TTL)
}

// prune marks codes past their time expired and forgets pairings a
// minute after that.
func (b *Book) prune(now time.Time) {
	for id, p := range b.pairings {
		if p.Status == Pending && !now.Before(p.ExpiresAt) {
			p.Status = Expired
		}
		if now.After(p.ExpiresAt.Add(linger)) {
			delete(b.pairings, id)
		}
	}
}

// newCode returns six digits no other pairing holds.
func (b *Book) newCode() string {
	for {
		n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
		if err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		code := fmt.Sprintf("%06d", n.Int64())
		if !b.holds(code) {
			return code
		}
	}
}

// holds says whether a pairing holds code.
func (b *Book) holds(code string) bool {
	for _, p := range b.pairings {
		if p.Code == code {
			return true
		}
	}
	return false
}

// NormalizeCode is a code as typed ("123 456", "123-456") as issued.
func NormalizeCode(code string) string {
	return strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(code))
}

// secretID is 192 random bits, URL-safe.
func secretID() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// printableUA is a user agent as the desktop shows it: its control and
// formatting characters as escapes, cut to maxUserAgent characters.
func printableUA(ua string) string {
	ua = redact.Printable(strings.TrimSpace(ua))
	if utf8.RuneCountInString(ua) > maxUserAgent {
		ua = string([]rune(ua)[:maxUserAgent-1]) + "…"
	}
	if ua == "" {
		return "unknown"
	}
	return ua
}
