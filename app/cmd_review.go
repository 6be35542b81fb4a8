package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/redact"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdReview: hivecrew review ID [--approve | --discard] [PATH]... — the
// changes a task's agent made to the host folders it was given (run
// --folder), listed, then written to the host or discarded.
func cmdReview(e *env, args []string) error {
	fs := e.flags()
	approve := fs.Bool("approve", false, "write the changes (all, or those of the PATHs given) to the host folders")
	discard := fs.Bool("discard", false, "discard the changes (all, or those of the PATHs given)")
	diff := fs.Bool("diff", false, "print the text changes as diffs")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return e.bad(fs, "review needs a task ID")
	case *approve && *discard:
		return e.bad(fs, "give --approve or --discard, not both")
	case len(pos) > 1 && !*approve && !*discard:
		return e.bad(fs, "PATHs choose what --approve or --discard decides")
	}
	c, id, err := e.connectTask(pos[0])
	if err != nil {
		return err
	}
	rev, err := c.Writeback(e.ctx, id)
	if err != nil {
		return err
	}
	if rev == nil {
		return fmt.Errorf("task %s has no changes to host folders waiting for review", shortID(id))
	}
	if !*approve && !*discard {
		if e.json {
			return e.printJSON(rev)
		}
		return printReview(e, *rev, *diff)
	}
	var ids []string
	for _, want := range pos[1:] {
		i := slices.IndexFunc(rev.Items, func(it wire.WritebackItem) bool {
			return it.Path == want || it.DestinationPath == want || it.Folder+"/"+it.Path == want
		})
		if i < 0 {
			return fmt.Errorf("task %s changed no file %s (hivecrew review %s lists the changes)", shortID(id), want, shortID(id))
		}
		ids = append(ids, rev.Items[i].ID)
	}
	t, err := c.DecideWriteback(e.ctx, id, *approve, ids)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(t)
	}
	if t.Status == "writebackReview" {
		n := 0
		if t.PendingWriteback != nil {
			n = t.PendingWriteback.Count
		}
		e.out("Done; waiting for review: %s.", plural(n, "change"))
	} else if t.ResultSummary != nil {
		e.out("%s", lastParagraph(*t.ResultSummary))
	}
	after, err := c.Writeback(e.ctx, id)
	if err == nil && after != nil {
		for _, it := range after.Items {
			if it.State == "conflict" && it.ConflictReason != nil {
				fmt.Fprintf(e.stderr, "hivecrew: not written: %s\n", oneLine(*it.ConflictReason))
			}
		}
	}
	return nil
}

func lastParagraph(s string) string {
	parts := strings.Split(strings.TrimSpace(s), "\n\n")
	return parts[len(parts)-1]
}

// printReview lists a review's changes, one a line: what, where, and why
// one cannot be written.
func printReview(e *env, rev wire.WritebackReview, diffs bool) error {
	tw := table(e.stdout, "CHANGE", "FILE", "SIZE", "STATE")
	for _, it := range rev.Items {
		bytes := "-"
		switch {
		case it.SizeBefore != nil && it.SizeAfter != nil:
			bytes = fmt.Sprintf("%s → %s", size(*it.SizeBefore), size(*it.SizeAfter))
		case it.SizeAfter != nil:
			bytes = size(*it.SizeAfter)
		case it.SizeBefore != nil:
			bytes = size(*it.SizeBefore)
		}
		state := it.State
		switch {
		case it.Refused != "":
			state = "refused: " + it.Refused
		case it.HasConflict && it.ConflictReason != nil:
			state = "conflict: " + *it.ConflictReason
		}
		row(tw, it.Op, oneLine(it.DestinationPath), bytes, oneLine(state))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if diffs {
		for _, it := range rev.Items {
			if it.DiffPreview != nil && it.State == "pending" {
				// The guest wrote these lines: an escape sequence in them
				// could hide a line from the user who approves it, a
				// bidirectional override reorder one. They are shown as
				// escapes (\x1b, \u202e), never acted on.
				fmt.Fprintf(e.stdout, "\n%s", redact.PrintableText(*it.DiffPreview))
			}
		}
	}
	e.out("\nhivecrew review %s --approve [PATH]...  writes them; --discard drops them.", shortID(rev.TaskID))
	return nil
}
