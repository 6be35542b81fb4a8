package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

func TestDeviceSessions(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	now := time.Now()
	token, d, err := s.CreateDevice(ctx, Device{Name: "Safari on iOS", UserAgent: "Mozilla/5.0 (iPhone)", StepUpUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, DeviceTokenPrefix) || len(token) < 40 || strings.Contains(string(d.Hash), token) {
		t.Fatalf("token %q, hash %x", token, d.Hash)
	}
	got, err := s.DeviceSession(ctx, token, time.Hour)
	if err != nil || got.ID != d.ID || got.Name != "Safari on iOS" || !got.StepUpUntil.Equal(d.StepUpUntil) {
		t.Fatalf("session of the token: %+v, %v", got, err)
	}
	for _, bad := range []string{"", token + "x", DeviceTokenPrefix + "forged", strings.TrimPrefix(token, DeviceTokenPrefix)} {
		if _, err := s.DeviceSession(ctx, bad, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
			t.Fatalf("token %q: %v", bad, err)
		}
	}

	// Unused longer than idle: forgotten.
	idle, _, _ := s.CreateDevice(ctx, Device{Name: "idle", UserAgent: "x", ExpiresAt: now.Add(time.Hour)})
	s.db.Model(&Device{}).Where("name = ?", "idle").Update("last_seen_at", now.Add(-2*time.Hour).UTC())
	if _, err := s.DeviceSession(ctx, idle, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
		t.Fatalf("an idle device: %v", err)
	}
	// Past its end: forgotten.
	old, _, _ := s.CreateDevice(ctx, Device{Name: "old", UserAgent: "x", ExpiresAt: now.Add(-time.Second)})
	if _, err := s.DeviceSession(ctx, old, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
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
	if _, err := s.DeviceSession(ctx, token, time.Hour); !errors.Is(err, ErrBadDeviceSession) {
		t.Fatalf("a revoked device's token: %v", err)
	}
	if err := s.DeleteDevice(ctx, d.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("revoking twice: %v", err)
	}
}
