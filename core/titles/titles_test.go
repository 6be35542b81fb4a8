package titles

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
)

// model answers every description with one title, at a price.
type model struct {
	title string
	calls atomic.Int32
}

func (m *model) Title(context.Context, string) (string, llm.Usage, error) {
	m.calls.Add(1)
	return m.title, llm.Usage{Prompt: 40, Completion: 6}, nil
}

func (m *model) Cost(llm.Usage) (float64, bool) { return 0.01, true }

// TestTitleFromTheModel: a new task gets the model's title and the
// request's tokens and cost; a task the user renamed first keeps the
// user's title (its tokens still count); with titles from descriptions,
// no request is made.
func TestTitleFromTheModel(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hivecrew.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := &model{title: "Quarterly sums"}
	fromDesc := false
	var told atomic.Int32
	tl, err := New(Config{Store: st, Model: func(context.Context, store.Task) (Model, error) { return m, nil },
		FromDescription: func() bool { return fromDesc }, Notify: func(string) { told.Add(1) }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	fresh := store.Task{ID: "a", Description: "sum the quarter", ProviderName: "P", ModelID: "m", Status: store.StatusQueued}
	renamed := store.Task{ID: "b", Description: "sum the year", ProviderName: "P", ModelID: "m", Status: store.StatusQueued}
	for _, task := range []*store.Task{&fresh, &renamed} {
		if err := st.CreateTask(ctx, task, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.UpdateTask(ctx, "b", store.Update{Mutate: func(t *store.Task) error {
		t.Title, t.TitleEdited = "Mine", true
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	tl.Later(ctx, fresh)
	tl.Later(ctx, renamed) // the user renamed it after it was queued
	tl.Close()
	a, _ := st.GetTask(ctx, "a")
	b, _ := st.GetTask(ctx, "b")
	if a.Title != "Quarterly sums" || a.TitlePromptTokens != 40 || a.PromptTokens != 40 || a.CostUSD != 0.01 {
		t.Fatalf("titled task: %q, %d title tokens, %d tokens, $%g", a.Title, a.TitlePromptTokens, a.PromptTokens, a.CostUSD)
	}
	if b.Title != "Mine" || b.TitleCompletionTokens != 6 {
		t.Fatalf("renamed task: %q, %d title tokens", b.Title, b.TitleCompletionTokens)
	}
	if told.Load() != 2 {
		t.Fatalf("watchers told %d times; want 2", told.Load())
	}

	fromDesc = true
	tl2, _ := New(Config{Store: st, Model: func(context.Context, store.Task) (Model, error) { return m, nil },
		FromDescription: func() bool { return fromDesc }, Notify: func(string) {}, Log: slog.New(slog.DiscardHandler)})
	tl2.Later(ctx, fresh)
	tl2.Close()
	if m.calls.Load() != 2 {
		t.Fatalf("%d requests; want none with titles from descriptions", m.calls.Load()-2)
	}
}

// TestCheckUser: a user's title is made one line; an empty or oversized
// one is refused.
func TestCheckUser(t *testing.T) {
	if got, err := CheckUser("  Weekly\nreport\t "); err != nil || got != "Weekly report" {
		t.Fatalf("cleaned %q, %v", got, err)
	}
	for _, bad := range []string{" \n ", strings.Repeat("x", MaxUserTitle+1)} {
		if _, err := CheckUser(bad); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("title %.20q: %v; want invalid", bad, err)
		}
	}
}
