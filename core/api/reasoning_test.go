package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestProviderDefaultReasoningEffort: a provider's default reasoning effort
// goes with its tasks that ask for none; a task's own effort wins, and a
// task that turns reasoning off sends none. An effort no provider knows is
// refused.
func TestProviderDefaultReasoningEffort(t *testing.T) {
	h := startHelper(t, nil)
	p := h.addProvider()
	ctx := context.Background()
	bad := "extreme"
	if _, err := h.unix.UpdateProvider(ctx, p.ID, wire.ProviderInput{DefaultReasoningEffort: &bad}); err == nil || !strings.Contains(err.Error(), "defaultReasoningEffort") {
		t.Fatalf("effort %q: %v", bad, err)
	}
	high := "high"
	up, err := h.unix.UpdateProvider(ctx, p.ID, wire.ProviderInput{DefaultReasoningEffort: &high})
	if err != nil || up.DefaultReasoningEffort != "high" {
		t.Fatalf("update %+v, %v", up, err)
	}
	off := false
	for marker, c := range map[string]struct {
		in   wire.CreateTask
		want string
	}{
		"[[default]]": {wire.CreateTask{}, `"reasoning_effort":"high"`},
		"[[own]]":     {wire.CreateTask{ReasoningEffort: "low"}, `"reasoning_effort":"low"`},
		"[[off]]":     {wire.CreateTask{ReasoningEnabled: &off}, ""},
	} {
		h.llm.Script(marker, llmtest.Done("Done.")...)
		in := c.in
		in.Description = "Think " + marker
		task, err := h.unix.CreateTask(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		h.waitTask(task.ID, "its end", func(t wire.Task) bool { return t.Status == "completed" })
		first := h.llm.Requests(marker)[0]
		if c.want == "" && strings.Contains(first, "reasoning_effort") || c.want != "" && !strings.Contains(first, c.want) {
			t.Errorf("%s: the request's reasoning effort is wrong (want %q): %.300s", marker, c.want, first)
		}
	}
}
