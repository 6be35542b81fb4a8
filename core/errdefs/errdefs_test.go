package errdefs

import (
	"errors"
	"fmt"
	"testing"
)

func TestClassSurvivesWrapping(t *testing.T) {
	err := fmt.Errorf("load task: %w", NotFoundf("task %s not found", "t1"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("errors.Is(%v, ErrNotFound) = false", err)
	}
	if errors.Is(err, ErrConflict) {
		t.Fatalf("a not-found error also matched ErrConflict")
	}
	if got, want := err.Error(), "load task: task t1 not found"; got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
	if Class(err) != ErrNotFound {
		t.Fatalf("Class = %v, want ErrNotFound", Class(err))
	}
	if Class(errors.New("plain")) != nil {
		t.Fatalf("a plain error has a class")
	}
}

func TestEveryConstructorHasItsClass(t *testing.T) {
	for _, c := range []struct {
		err   error
		class error
	}{
		{NotFoundf("x"), ErrNotFound},
		{Conflictf("x"), ErrConflict},
		{Invalidf("x"), ErrInvalid},
		{Unavailablef("x"), ErrUnavailable},
		{Unsupportedf("x"), ErrUnsupported},
		{TooLargef("x"), ErrTooLarge},
	} {
		if Class(c.err) != c.class {
			t.Errorf("Class(%v) = %v, want %v", c.err, Class(c.err), c.class)
		}
	}
}
