package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

func ptr(s string) *string { return &s }

func TestFileToolsRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	w, err := call[protocol.WriteFileResult](t, h.cli, protocol.MethodWriteFile, protocol.WriteFileParams{Path: "outbox/summary/report.md", Contents: ptr("# Summary\nwörld ✓\n")})
	if err != nil || w.Size != int64(len("# Summary\nwörld ✓\n")) {
		t.Fatalf("write = %+v, %v", w, err)
	}
	got, err := os.ReadFile(filepath.Join(h.shared, "outbox", "summary", "report.md"))
	if err != nil || string(got) != "# Summary\nwörld ✓\n" {
		t.Fatalf("file on disk = %q, %v", got, err)
	}
	// Absolute paths inside the share work too.
	r, err := call[protocol.ReadFileResult](t, h.cli, protocol.MethodReadFile, protocol.ReadFileParams{Path: filepath.Join(h.shared, "outbox/summary/report.md")})
	if err != nil || r.Contents == nil || *r.Contents != "# Summary\nwörld ✓\n" || r.Base64 != nil {
		t.Fatalf("read = %+v, %v", r, err)
	}
	bin := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}
	if _, err := call[protocol.WriteFileResult](t, h.cli, protocol.MethodWriteFile, protocol.WriteFileParams{Path: "workspace/x.bin", Base64: bin}); err != nil {
		t.Fatal(err)
	}
	r, err = call[protocol.ReadFileResult](t, h.cli, protocol.MethodReadFile, protocol.ReadFileParams{Path: "workspace/x.bin"})
	if err != nil || r.Contents != nil || string(r.Base64) != string(bin) {
		t.Fatalf("binary read = %+v, %v", r, err)
	}
	r, err = call[protocol.ReadFileResult](t, h.cli, protocol.MethodReadFile, protocol.ReadFileParams{Path: "outbox/summary/report.md", MaxBytes: 4})
	if err != nil || *r.Contents != "# Su" || !r.Truncated || r.Size != w.Size {
		t.Fatalf("capped read = %+v, %v", r, err)
	}

	ls, err := call[protocol.ListDirectoryResult](t, h.cli, protocol.MethodListDirectory, protocol.ListDirectoryParams{Path: ""})
	if err != nil || len(ls.Entries) != 3 || ls.Entries[0].Name != "inbox" || !ls.Entries[1].IsDir {
		t.Fatalf("list = %+v, %v", ls, err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodMoveFile, protocol.MoveFileParams{Source: "workspace/x.bin", Destination: "outbox/images/x.bin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.shared, "outbox/images/x.bin")); err != nil {
		t.Fatalf("moved file missing: %v", err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodMoveFile, protocol.MoveFileParams{Source: "outbox/images/x.bin", Destination: "outbox/summary/report.md"}); codeOf(err) != protocol.CodeConflict {
		t.Fatalf("move onto an existing file = %v, want conflict", err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodReadFile, protocol.ReadFileParams{Path: "inbox/missing.pdf"}); codeOf(err) != protocol.CodeNotFound {
		t.Fatalf("missing file = %v, want not found", err)
	}
	// No temporary files are left behind.
	ents, _ := os.ReadDir(filepath.Join(h.shared, "outbox", "summary"))
	if len(ents) != 1 {
		t.Fatalf("outbox/summary holds %d entries, want only report.md", len(ents))
	}
}

// TestFileToolsRefuseEscapes: "..", absolute paths outside the share and
// symlinks leading out are all refused, for reading, writing, listing and
// moving.
func TestFileToolsRefuseEscapes(t *testing.T) {
	h := newHarness(t, nil)
	outsideDir := t.TempDir()
	secret := filepath.Join(outsideDir, "secret.txt")
	os.WriteFile(secret, []byte("host secret"), 0o644)
	if err := os.Symlink("/etc", filepath.Join(h.shared, "outbox", "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(h.shared, "outbox", "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outsideDir, filepath.Join(h.shared, "workspace", "out")); err != nil {
		t.Fatal(err)
	}
	// A symlink that stays inside the share is fine.
	if err := os.Symlink("../inbox", filepath.Join(h.shared, "workspace", "in")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(h.shared, "inbox", "ok.txt"), []byte("fine"), 0o644)

	for _, p := range []string{"../../etc/passwd", "inbox/../../etc/passwd", "/etc/passwd", "outbox/etc/passwd", "outbox/x", secret} {
		_, err := call[protocol.ReadFileResult](t, h.cli, protocol.MethodReadFile, protocol.ReadFileParams{Path: p})
		if codeOf(err) != protocol.CodePermissionDenied {
			t.Errorf("read_file %q = %v, want permission denied", p, err)
		}
	}
	for _, p := range []string{"../escape.txt", "workspace/out/planted.txt", filepath.Join(outsideDir, "planted.txt"), "outbox/x"} {
		_, err := call[protocol.WriteFileResult](t, h.cli, protocol.MethodWriteFile, protocol.WriteFileParams{Path: p, Contents: ptr("x")})
		if p == "outbox/x" {
			// Replacing the symlink itself is allowed; the target outside is untouched.
			if err != nil {
				t.Errorf("write_file over a symlink: %v", err)
			}
			continue
		}
		if codeOf(err) != protocol.CodePermissionDenied {
			t.Errorf("write_file %q = %v, want permission denied", p, err)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "host secret" {
		t.Fatalf("the file outside the share changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outsideDir, "planted.txt")); !os.IsNotExist(err) {
		t.Fatalf("a file was planted outside the share: %v", err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodListDirectory, protocol.ListDirectoryParams{Path: "workspace/out"}); codeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("list through a symlink out = %v", err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodMoveFile, protocol.MoveFileParams{Source: "inbox/ok.txt", Destination: "../stolen.txt"}); codeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("move out = %v", err)
	}
	r, err := call[protocol.ReadFileResult](t, h.cli, protocol.MethodReadFile, protocol.ReadFileParams{Path: "workspace/in/ok.txt"})
	if err != nil || *r.Contents != "fine" {
		t.Fatalf("read through an inside symlink = %+v, %v", r, err)
	}
	for _, p := range []protocol.WriteFileParams{{Path: "a.txt"}, {Path: "a.txt", Contents: ptr("x"), Base64: []byte("y")}, {Path: ".", Contents: ptr("x")}} {
		if _, err := call[any](t, h.cli, protocol.MethodWriteFile, p); codeOf(err) != protocol.CodeInvalidParams {
			t.Errorf("write_file %+v = %v, want invalid params", p, err)
		}
	}
	big := strings.Repeat("x", MaxWriteBytes+1)
	if _, err := call[any](t, h.cli, protocol.MethodWriteFile, protocol.WriteFileParams{Path: "big.txt", Contents: &big}); codeOf(err) != protocol.CodeTooLarge {
		t.Errorf("oversized write = %v, want too large", err)
	}
}

func TestIsText(t *testing.T) {
	for in, want := range map[string]bool{
		"plain":                 true,
		"wörld ✓ 日本":            true,
		"cut mid-rune \xe6\x97": true, // a limit cut the last character
		"bad \xff byte":         false,
		"nul\x00":               false,
	} {
		if got := isText([]byte(in)); got != want {
			t.Errorf("isText(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestReadDocumentStaysInTheShare: read_document opens through the share's
// root (no escape by .. or a link), answers at once for a FIFO planted
// under a document's name instead of waiting for a writer, and reads what
// it may; hello announces it.
func TestReadDocumentStaysInTheShare(t *testing.T) {
	h := newHarness(t, nil)
	outside := filepath.Join(t.TempDir(), "secret.pdf")
	os.WriteFile(outside, []byte("%PDF-1.4 secret"), 0o644)
	if err := os.Symlink(outside, filepath.Join(h.shared, "inbox", "link.pdf")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../../etc/passwd", "inbox/link.pdf", outside} {
		if _, err := call[protocol.DocumentResult](t, h.cli, protocol.MethodReadDocument, protocol.ReadDocumentParams{Path: p}); codeOf(err) != protocol.CodePermissionDenied {
			t.Errorf("read_document %q = %v, want permission denied", p, err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(h.shared, "inbox", "report.pdf"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := call[protocol.DocumentResult](t, h.cli, protocol.MethodReadDocument, protocol.ReadDocumentParams{Path: "inbox/report.pdf"}); err == nil || !strings.Contains(err.Error(), "not a regular file") || time.Since(start) > 2*time.Second {
		t.Errorf("a FIFO: %v after %s", err, time.Since(start))
	}
	os.WriteFile(filepath.Join(h.shared, "inbox", "notes.md"), []byte("# Notes\nbuy milk\n"), 0o644)
	res, err := call[protocol.DocumentResult](t, h.cli, protocol.MethodReadDocument, protocol.ReadDocumentParams{Path: "inbox/notes.md"})
	if err != nil || res.Kind != protocol.DocumentKindText || res.Format != "text" || res.Text != "# Notes\nbuy milk\n" || res.Truncated {
		t.Errorf("a text file: %+v, %v", res, err)
	}
	if _, err := call[protocol.DocumentResult](t, h.cli, protocol.MethodReadDocument, protocol.ReadDocumentParams{Path: "inbox"}); codeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("a folder: %v", err)
	}
}
