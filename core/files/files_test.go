package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/hostpath"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCollectNeverFollowsLinks: symlinks (to files outside, to folders
// outside, to files inside), FIFOs and files over the caps are skipped with
// a reason; regular files, nested ones included, are copied.
func TestCollectNeverFollowsLinks(t *testing.T) {
	shared := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret.txt"), "secret")
	outbox := filepath.Join(shared, Outbox)
	write(t, filepath.Join(outbox, "report.txt"), "report")
	write(t, filepath.Join(outbox, "charts", "q3.csv"), "1,2,3")
	write(t, filepath.Join(outbox, "big.bin"), strings.Repeat("x", 2000))
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(outbox, "x"))
	os.Symlink("/etc/passwd", filepath.Join(outbox, "passwd"))
	os.Symlink(outside, filepath.Join(outbox, "dir"))
	os.Symlink("report.txt", filepath.Join(outbox, "inner"))
	if err := mkfifo(filepath.Join(outbox, "pipe")); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	col, err := Collect(context.Background(), outbox, dest, Limits{MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	got, skipped := col.Collected, col.Skipped
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "charts/q3.csv,report.txt" {
		t.Fatalf("collected %v", names)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[s.Name] = s.Reason
	}
	for _, name := range []string{"x", "passwd", "dir", "inner", "pipe", "big.bin"} {
		if reasons[name] == "" {
			t.Errorf("%s was not reported as skipped (%v)", name, reasons)
		}
	}
	if !strings.Contains(reasons["x"], "symbolic link") || !strings.Contains(reasons["big.bin"], "cap") {
		t.Errorf("reasons: %v", reasons)
	}
	filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); string(b) == "secret" {
			t.Errorf("%s holds a file from outside the outbox", p)
		}
		return nil
	})
	if col, err := Collect(context.Background(), filepath.Join(shared, "missing"), dest, Limits{}); err != nil || len(col.Collected) != 0 {
		t.Fatalf("missing outbox: %v %v", col, err)
	}
	// The guest made the outbox itself a link to a host folder: nothing
	// of it is read, and the outbox is listed as skipped.
	os.RemoveAll(outbox)
	os.Symlink(outside, outbox)
	dest = t.TempDir()
	col, err = Collect(context.Background(), outbox, dest, Limits{})
	if err != nil || len(col.Collected) != 0 || len(col.Skipped) != 1 || !strings.Contains(col.Skipped[0].Reason, "symbolic link") {
		t.Fatalf("a linked outbox: %+v %v", col, err)
	}
	if ents, _ := os.ReadDir(dest); len(ents) != 0 {
		t.Fatalf("collected through the linked outbox: %v", ents)
	}
}

// TestCollectTaskCap: files beyond the per-task cap are skipped.
func TestCollectTaskCap(t *testing.T) {
	outbox := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		write(t, filepath.Join(outbox, n), strings.Repeat("x", 400))
	}
	col, err := Collect(context.Background(), outbox, t.TempDir(), Limits{MaxTaskBytes: 1000})
	if err != nil || len(col.Collected) != 2 || len(col.Skipped) != 1 {
		t.Fatalf("got %d, skipped %v, %v", len(col.Collected), col.Skipped, err)
	}
}

// TestPlaceIsCollisionSafe: existing files are never overwritten.
func TestPlaceIsCollisionSafe(t *testing.T) {
	src := t.TempDir()
	write(t, filepath.Join(src, "report.txt"), "new")
	out := t.TempDir()
	write(t, filepath.Join(out, "report.txt"), "old")
	write(t, filepath.Join(out, "report (1).txt"), "older")
	c := []Collected{{Name: "report.txt", Path: filepath.Join(src, "report.txt")}}
	placed, err := Place(openOut(t, out), hostpath.Self(), c)
	if err != nil || len(placed) != 1 || filepath.Base(placed[0]) != "report (2).txt" {
		t.Fatalf("placed %v, %v", placed, err)
	}
	for name, want := range map[string]string{"report.txt": "old", "report (1).txt": "older", "report (2).txt": "new"} {
		if b, _ := os.ReadFile(filepath.Join(out, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
}

// TestCopyInAndNames: inputs land in inbox/; bad names are refused.
func TestCopyInAndNames(t *testing.T) {
	src := filepath.Join(t.TempDir(), "in.txt")
	write(t, src, "data")
	shared := t.TempDir()
	if err := CopyIn(shared, []Input{{Name: "in.txt", Path: src}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(shared, Inbox, "in.txt")); string(b) != "data" {
		t.Fatalf("inbox/in.txt = %q", b)
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", `a\b`, "nul\x00", "tab\there", strings.Repeat("n", 256), "\xff"} {
		if _, err := CheckName(bad); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("CheckName(%q) = %v", bad, err)
		}
		if err := CopyIn(shared, []Input{{Name: bad, Path: src}}); err == nil {
			t.Errorf("CopyIn accepted %q", bad)
		}
	}
	if _, err := CheckName("Q3 report (final).pdf"); err != nil {
		t.Fatal(err)
	}
}

// TestCopyInFollowsNoLink: code in the VM ran before the copy and made
// inbox a link to a host folder, or made an input's name a link or a FIFO:
// nothing is written through the link (the copy fails saying so), and the
// name of an input is replaced, not written through, nor waited on.
func TestCopyInFollowsNoLink(t *testing.T) {
	src := filepath.Join(t.TempDir(), "in.txt")
	write(t, src, "data")
	victim := t.TempDir()
	shared := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(shared, Inbox)); err != nil {
		t.Fatal(err)
	}
	err := CopyIn(shared, []Input{{Name: "in.txt", Path: src}})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("CopyIn through a linked inbox: %v", err)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("written through the link: %v", ents)
	}
	shared = t.TempDir()
	write(t, filepath.Join(victim, "target"), "host file")
	os.MkdirAll(filepath.Join(shared, Inbox), 0o755)
	os.Symlink(filepath.Join(victim, "target"), filepath.Join(shared, Inbox, "in.txt"))
	mkfifo(filepath.Join(shared, Inbox, "two.txt"))
	if err := CopyIn(shared, []Input{{Name: "in.txt", Path: src}, {Name: "two.txt", Path: src}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(victim, "target")); string(b) != "host file" {
		t.Fatalf("the link's target was written: %q", b)
	}
	for _, n := range []string{"in.txt", "two.txt"} {
		fi, err := os.Lstat(filepath.Join(shared, Inbox, n))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("inbox/%s: %v %v; want the input, a regular file", n, fi, err)
		}
	}
}
