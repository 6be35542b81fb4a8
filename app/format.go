package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/wire"
)

// table writes aligned columns; Flush when done.
func table(w io.Writer, header ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(header) > 0 {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	return tw
}

// row writes one row of a table.
func row(tw *tabwriter.Writer, cols ...string) {
	for i, c := range cols {
		cols[i] = strings.ReplaceAll(c, "\t", " ")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
}

// oneLine collapses runs of white space (newlines included) to one space.
func oneLine(s string) string { return files.Printable(strings.Join(strings.Fields(s), " ")) }

// clip shortens s to n runes, ending with "…" when it was longer.
func clip(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	if n == 1 {
		return "…"
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// shortID is the first 8 characters of an id (tasks take unique prefixes).
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// size formats a byte count: 512 B, 1.2 KB, 3.4 MB.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "KMGTPE"[exp])
}

// clock formats a duration as 0:42, 12:03 or 1:02:03.
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 0 {
		s = 0
	}
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// ago formats a past time relative to now (12s ago, 5m ago, 3h ago,
// 2d ago), and as a date beyond a week.
func ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return localTime(t)
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 7*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}

// localTime formats a time in the local zone to the minute.
func localTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04 MST")
}

// optTime formats an optional time.
func optTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return localTime(*t)
}

// plural returns "1 task" or "3 tasks".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// field is one line of a details block.
type field struct{ key, value string }

// fields writes "Key:  value" lines with the values aligned; a value of
// several lines continues under itself; empty values are left out.
func fields(w io.Writer, fs ...field) {
	width := 0
	for _, f := range fs {
		if f.value != "" {
			width = max(width, utf8.RuneCountInString(f.key)+1)
		}
	}
	pad := strings.Repeat(" ", width+2)
	for _, f := range fs {
		if f.value == "" {
			continue
		}
		// What a guest or a model wrote (summaries, file names) reaches the
		// terminal with its control characters shown, not acted on.
		lines := strings.Split(files.PrintableText(strings.TrimRight(f.value, "\n")), "\n")
		fmt.Fprintf(w, "%-*s  %s\n", width, f.key+":", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%s\n", pad, l)
		}
	}
}

// statusWords is a task status as people say it ("timed out" for the
// API's timedOut).
func statusWords(status string) string {
	if w, ok := map[string]string{
		"waitingForVM": "waiting for a VM", "timedOut": "timed out", "maxIterations": "out of steps",
		"planReview": "plan to review", "planFailed": "planning failed", "writebackReview": "changes to review",
	}[status]; ok {
		return w
	}
	return status
}

// stateWords is what a task's state asks of people: a question or an
// approval waiting for the user reads "needs you", ahead of its status.
func stateWords(t wire.Task) string {
	switch {
	case t.PendingQuestion != nil:
		return "needs you: question"
	case t.PendingPermission != nil:
		return "needs you: approve " + t.PendingPermission.ToolName
	case t.TakenOver:
		return "taken over"
	case t.Status == "planReview":
		return "needs you: plan to review"
	case t.Status == "writebackReview" && t.PendingWriteback != nil:
		return fmt.Sprintf("needs you: review %s to host folders", plural(t.PendingWriteback.Count, "change"))
	case t.Status == "writebackReview":
		return "needs you: changes to host folders to review"
	}
	return statusWords(t.Status)
}

// stateAndReason is stateWords with the reason of the status after it,
// when there is one.
func stateAndReason(t wire.Task) string {
	if t.StatusReason != "" {
		return stateWords(t) + " (" + t.StatusReason + ")"
	}
	return stateWords(t)
}
