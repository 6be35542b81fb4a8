package fake

import (
	"context"
	"errors"
	"testing"

	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/vmtest"
)

func TestConformance(t *testing.T) {
	vmtest.Run(t, vmtest.Harness{Backend: New(Options{}), Template: vm.Template{ID: "host", Kind: vm.KindHost}, Dir: t.TempDir()})
}

func TestHostLimitAndCrash(t *testing.T) {
	ctx := context.Background()
	b := New(Options{MaxRunning: 1})
	dir := t.TempDir()
	spec := func(id string) vm.Spec {
		return vm.Spec{ID: id, Dir: dir + "/" + id, Template: vm.Template{Kind: vm.KindHost}}
	}
	m1, _ := b.Create(ctx, spec("one"))
	m2, _ := b.Create(ctx, spec("two"))
	if err := m1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m2.Start(ctx); !vm.IsHostLimit(err) {
		t.Fatalf("second start past the host limit = %v", err)
	}
	b.Machine("one").Crash()
	<-m1.Exited()
	if st := m1.Status(); st.State != vm.StateError || st.Reason == "" {
		t.Fatalf("crashed machine status = %+v", st)
	}
	if err := m2.Start(ctx); err != nil {
		t.Fatalf("start after the crash freed the slot: %v", err)
	}
	m2.Delete(ctx)
	if err := m1.Delete(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
