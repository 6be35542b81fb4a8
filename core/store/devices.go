package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// DeviceTokenPrefix starts every paired device's session token (its
// cookie), which tells it from a web session's at a glance.
const DeviceTokenPrefix = "hcd_"

// ErrBadDeviceSession is returned by DeviceSession for a token that is
// malformed, unknown, revoked, expired or idle too long, or of a device
// paired before sessions were bound to an address; callers answer 401
// without saying which.
var ErrBadDeviceSession = errors.New("invalid device session")

// ErrDeviceElsewhere is returned by DeviceSession for a live session's
// token sent from an address other than the one its device was paired
// from. The session goes on: whoever replays a token cannot end it.
var ErrDeviceElsewhere = errors.New("device session sent from another address")

// Device is a browser paired with the helper (a pairing code the user
// approved on the desktop): its session, found by the hash of its token,
// and bound to the address it was paired from. Deleting the row ends the
// session.
type Device struct {
	ID        string `gorm:"primaryKey"`
	Name      string `gorm:"not null"`
	UserAgent string `gorm:"not null"`
	Hash      []byte `gorm:"not null;uniqueIndex"`
	// CreatedAt is when the device received its session.
	CreatedAt  time.Time `gorm:"not null"`
	LastSeenAt time.Time `gorm:"not null"`
	// StepUpUntil ends the window in which the session may change what
	// needs step-up (API keys, providers, safety settings, grants).
	StepUpUntil time.Time `gorm:"not null"`
	ExpiresAt   time.Time `gorm:"not null"`
	// Address is the exact network address (netip.Addr's form, IPv4 for
	// an IPv4-mapped one) the device was paired from: the session is
	// accepted from it alone. Empty for a device paired before schema 21,
	// whose session has ended.
	Address string `gorm:"not null;default:''"`
}

// CreateDevice records a paired device (Name, UserAgent, StepUpUntil,
// ExpiresAt and Address as given; Address is required) and returns its
// session token in clear, once; only its hash is stored.
func (s *Store) CreateDevice(ctx context.Context, d Device) (string, Device, error) {
	if d.Address == "" {
		return "", Device{}, errdefs.Invalidf("device %q: the address it was paired from is required", d.Name)
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", Device{}, fmt.Errorf("create device session: %w", err)
	}
	token := DeviceTokenPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(token))
	now := time.Now().UTC()
	d.ID, d.Hash, d.CreatedAt, d.LastSeenAt = uuid.NewString(), sum[:], now, now
	d.StepUpUntil, d.ExpiresAt = d.StepUpUntil.UTC(), d.ExpiresAt.UTC()
	if err := s.db.WithContext(ctx).Create(&d).Error; err != nil {
		return "", Device{}, fmt.Errorf("create device %q: %w", d.Name, classify(err))
	}
	return token, d, nil
}

// DeviceSession returns the device whose session token is token, sent
// from the address from, and marks it seen (at most once a minute). A
// device past ExpiresAt, unseen for longer than idle, or paired without an
// address, is deleted: ErrBadDeviceSession, as for any token that is not
// a live session. A live session's token sent from an address other than
// the device's is ErrDeviceElsewhere, and the device is left as it was
// (not deleted, not marked seen).
func (s *Store) DeviceSession(ctx context.Context, token string, from netip.Addr, idle time.Duration) (Device, error) {
	if !strings.HasPrefix(token, DeviceTokenPrefix) || len(token) > 128 {
		return Device{}, ErrBadDeviceSession
	}
	sum := sha256.Sum256([]byte(token))
	var found []Device
	if err := s.db.WithContext(ctx).Where("hash = ?", sum[:]).Limit(1).Find(&found).Error; err != nil {
		return Device{}, fmt.Errorf("find device session: %w", classify(err))
	}
	if len(found) == 0 {
		return Device{}, ErrBadDeviceSession
	}
	d, now := found[0], time.Now().UTC()
	if now.After(d.ExpiresAt) || now.Sub(d.LastSeenAt) > idle || d.Address == "" {
		if err := s.DeleteDevice(ctx, d.ID); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return Device{}, err
		}
		return Device{}, ErrBadDeviceSession
	}
	if !from.IsValid() || d.Address != from.String() {
		return Device{}, ErrDeviceElsewhere
	}
	if now.Sub(d.LastSeenAt) >= lastUsedGranularity {
		// Best effort: a busy database must not fail an authenticated request.
		if err := s.db.WithContext(ctx).Model(&Device{}).Where("id = ?", d.ID).Update("last_seen_at", now).Error; err != nil {
			s.log.Debug("record device use", "device", d.ID, "err", err)
		} else {
			d.LastSeenAt = now
		}
	}
	return d, nil
}

// ListDevices returns the paired devices, most recently paired first.
func (s *Store) ListDevices(ctx context.Context) ([]Device, error) {
	return list[Device](s.db.WithContext(ctx), "created_at DESC, id", "list devices")
}

// DeleteDevice forgets a device by id: its session ends at once. An
// unknown id is ErrNotFound.
func (s *Store) DeleteDevice(ctx context.Context, id string) error {
	return affected(s.db.WithContext(ctx).Where("id = ?", id).Delete(&Device{}), "delete device "+id,
		errdefs.NotFoundf("no paired device %q (`hivecrew devices ls` lists them)", id))
}
