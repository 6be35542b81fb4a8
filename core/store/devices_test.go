package store

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// phone is the address the test's devices are paired from.
var phone = netip.MustParseAddr("192.168.1.20")

func TestDeviceSessions(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	now := time.Now()
	if _, _, err := s.CreateDevice(ctx, Device{Name: "nowhere", UserAgent: "x", ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a device without the address it was paired from: %v", err)
	}
	token, d, err := s.CreateDevice(ctx, Device{Name: "Safari on iOS", UserAgent: "Mozilla/5.0 (iPhone)", StepUpUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), Address: phone.String()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, DeviceTokenPrefix) || len(token) < 40 || strings.Contains(string(d.Hash), token) {
		t.Fatalf("token %q, hash %x", token, d.Hash)
	}
	got, err := s.DeviceSession(ctx, token, phone, time.Hour)
	if err != nil || got.ID != d.ID || got.Name != "Safari on iOS" || !got.StepUpUntil.Equal(d.StepUpUntil) || got.Address != "192.168.1.20" {
		t.Fatalf("session of the token: %+v, %v", got, err)
	}
	for _, bad := range []string{"", token + "x", DeviceTokenPrefix + "forged", strings.TrimPrefix(token, DeviceTokenPrefix)} {
		if _, err := s.DeviceSession(ctx, bad, phone, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
			t.Fatalf("token %q: %v", bad, err)
		}
	}

	// From any other address, the token is refused, and the session
	// neither ends nor counts as used.
	s.db.Model(&Device{}).Where("id = ?", d.ID).Update("last_seen_at", now.Add(-10*time.Minute).UTC())
	for _, other := range []netip.Addr{netip.MustParseAddr("192.168.1.21"), netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::ffff:192.168.1.20"), {}} {
		if _, err := s.DeviceSession(ctx, token, other, time.Hour); !errors.Is(err, ErrDeviceElsewhere) {
			t.Fatalf("the token from %v: %v; want ErrDeviceElsewhere", other, err)
		}
	}
	if list, _ := s.ListDevices(ctx); len(list) != 1 || now.Sub(list[0].LastSeenAt) < 9*time.Minute {
		t.Fatalf("after the token was sent from elsewhere: %+v; want the device, not seen since", list)
	}
	if _, err := s.DeviceSession(ctx, token, phone, time.Hour); err != nil {
		t.Fatalf("the device itself after its token was sent from elsewhere: %v", err)
	}

	// Unused longer than idle: forgotten.
	idle, _, _ := s.CreateDevice(ctx, Device{Name: "idle", UserAgent: "x", ExpiresAt: now.Add(time.Hour), Address: phone.String()})
	s.db.Model(&Device{}).Where("name = ?", "idle").Update("last_seen_at", now.Add(-2*time.Hour).UTC())
	if _, err := s.DeviceSession(ctx, idle, phone, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
		t.Fatalf("an idle device: %v", err)
	}
	// Past its end: forgotten.
	old, _, _ := s.CreateDevice(ctx, Device{Name: "old", UserAgent: "x", ExpiresAt: now.Add(-time.Second), Address: phone.String()})
	if _, err := s.DeviceSession(ctx, old, phone, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
		t.Fatalf("an expired device: %v", err)
	}
	list, err := s.ListDevices(ctx)
	if err != nil || len(list) != 1 || list[0].ID != d.ID {
		t.Fatalf("devices after the idle and expired ones were used: %+v, %v", list, err)
	}

	// Revoked: its session ends at once.
	if err := s.DeleteDevice(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeviceSession(ctx, token, phone, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
		t.Fatalf("a revoked device's token: %v", err)
	}
	if err := s.DeleteDevice(ctx, d.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("revoking twice: %v", err)
	}
}

// TestDeviceAddressMigration: a database of schema 20, whose devices
// have no address, is migrated; those devices are forgotten (their tokens
// are refused from anywhere), and new ones are bound.
func TestDeviceAddressMigration(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	token, d, err := s.CreateDevice(ctx, Device{Name: "Safari on iOS", UserAgent: "x", ExpiresAt: time.Now().Add(time.Hour), Address: phone.String()})
	if err != nil {
		t.Fatal(err)
	}
	execAll(t, s, "ALTER TABLE devices DROP COLUMN address", "DELETE FROM schema_versions WHERE version >= 21")
	if s.db.Migrator().HasColumn(&Device{}, "Address") {
		t.Fatal("the schema 20 table has an address column: the test does not rebuild the old schema")
	}
	s2 := reopen(t, s, path)
	if list, err := s2.ListDevices(ctx); err != nil || len(list) != 0 {
		t.Fatalf("devices paired before the migration: %+v, %v; want none", list, err)
	}
	if _, err := s2.DeviceSession(ctx, token, phone, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
		t.Fatalf("the token of device %s, paired before: %v", d.ID, err)
	}
	if _, _, err := s2.CreateDevice(ctx, Device{Name: "again", UserAgent: "x", ExpiresAt: time.Now().Add(time.Hour), Address: phone.String()}); err != nil {
		t.Fatal(err)
	}
}
