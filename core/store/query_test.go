package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// The shared get, list and delete helpers, through the methods that use
// them: a second delete is not found and says what was missing; lists
// keep their order.
func TestDeleteByIDAndList(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	for _, name := range []string{"zeta", "alpha"} {
		if err := s.CreateTemplate(ctx, Template{ID: "t-" + name, Name: name, OS: "linux", Kind: "rootfs"}); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := s.ListTemplates(ctx)
	if err != nil || len(ts) != 2 || ts[0].Name != "alpha" || ts[1].Name != "zeta" {
		t.Fatalf("templates by name: %+v, %v", ts, err)
	}
	if err := s.DeleteTemplate(ctx, "t-zeta"); err != nil {
		t.Fatal(err)
	}
	err = s.DeleteTemplate(ctx, "t-zeta")
	if !errors.Is(err, errdefs.ErrNotFound) || err.Error() != "template t-zeta not found" {
		t.Errorf("second delete: %v, want not found naming the template", err)
	}
	if ts, _ := s.ListTemplates(ctx); len(ts) != 1 || ts[0].ID != "t-alpha" {
		t.Errorf("after the delete: %+v", ts)
	}

	sc := Schedule{Description: "water the plants", ScheduleType: "one-time", TimeZone: "UTC"}
	if err := s.CreateSchedule(ctx, &sc, []ScheduleFile{{Name: "b.txt"}, {Name: "a.txt"}}); err != nil {
		t.Fatal(err)
	}
	fs, err := s.ScheduleFiles(ctx, sc.ID)
	if err != nil || len(fs) != 2 || fs[0].Name != "a.txt" {
		t.Fatalf("schedule files by name: %+v, %v", fs, err)
	}
	if err := s.DeleteSchedule(ctx, sc.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSchedule(ctx, sc.ID); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), sc.ID) {
		t.Errorf("second schedule delete: %v", err)
	}
	if err := s.DeletePreset(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("delete a missing preset: %v", err)
	}
	if _, err := s.FindCredential(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) || err.Error() != `credential "nope" not found` {
		t.Errorf("find a missing credential: %v", err)
	}
	if _, err := s.FindProvider(ctx, ""); !errors.Is(err, errdefs.ErrNotFound) || err.Error() != "no default provider" {
		t.Errorf("find the default provider with none: %v", err)
	}
	if _, err := s.FindPreset(ctx, "Daily"); !errors.Is(err, errdefs.ErrNotFound) || err.Error() != `no preset "Daily"` {
		t.Errorf("find a missing preset: %v", err)
	}
	if next, err := s.NextScheduleRun(ctx); next != nil || err != nil {
		t.Errorf("next run with no schedule: %v, %v; want none", next, err)
	}
}
