package store

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// TestCreateCredentialsAllOrNothing: credentials imported together are
// stored together, or none of them when one name is taken; an update
// renames and changes a credential, and refuses a taken name.
func TestCreateCredentialsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	if err := s.CreateCredential(ctx, &Credential{Name: "github"}); err != nil {
		t.Fatal(err)
	}
	err := s.CreateCredentials(ctx, []*Credential{{Name: "bank"}, {Name: "github"}})
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("import with a taken name = %v, want conflict", err)
	}
	names := func() []string {
		cs, err := s.ListCredentials(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"github"}) {
		t.Fatalf("after a refused import: %v", got)
	}
	bank := &Credential{Name: "bank"}
	if err := s.CreateCredentials(ctx, []*Credential{bank, {Name: "mail"}}); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, []string{"bank", "github", "mail"}) {
		t.Fatalf("after the import: %v", got)
	}
	if err := s.UpdateCredential(ctx, Credential{ID: bank.ID, Name: "github"}); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("rename to a taken name = %v", err)
	}
	if err := s.UpdateCredential(ctx, Credential{ID: bank.ID, Name: "bank-2", Username: "ada", HasTOTP: true}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.FindCredential(ctx, bank.ID); err != nil || c.Name != "bank-2" || c.Username != "ada" || !c.HasTOTP {
		t.Fatalf("updated: %+v, %v", c, err)
	}
	if err := s.UpdateCredential(ctx, Credential{ID: "nope", Name: "x"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("update of a missing credential = %v", err)
	}
}

// TestUpdateMCPServer: every field an edit may change is saved, off
// included.
func TestUpdateMCPServer(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	m := MCPServer{Name: "files", Command: "/bin/a", Args: []string{"x"}, EnvNames: []string{"A"}, Permission: "ask", TimeoutSeconds: 60, Enabled: true}
	if err := s.CreateMCPServer(ctx, &m); err != nil {
		t.Fatal(err)
	}
	m.Command, m.Args, m.EnvNames, m.Permission, m.TimeoutSeconds, m.Enabled = "/bin/b", []string{"y", "z"}, []string{"B"}, "allow", 5, false
	if err := s.UpdateMCPServer(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindMCPServer(ctx, "files")
	if err != nil || got.Command != "/bin/b" || !slices.Equal(got.Args, []string{"y", "z"}) || !slices.Equal(got.EnvNames, []string{"B"}) ||
		got.Permission != "allow" || got.TimeoutSeconds != 5 || got.Enabled {
		t.Fatalf("updated: %+v, %v", got, err)
	}
	if err := s.UpdateMCPServer(ctx, MCPServer{ID: "nope", Name: "nope"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("update of a missing server = %v", err)
	}
}
