//go:build unix

package hostpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// other is another local user: nobody.
const other = 65534

// needRoot: making something another user owns takes root (the test
// machines run tests as root).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a file another user owns needs root")
	}
}

func mkdir(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, at string, uid int) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if err := os.Lchown(at, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v; want an invalid error saying %q", err, want)
	}
}

// TestResolveFollowsOnlyTrustedLinks: a link the user (or root) made is
// followed to the real path; one another user planted is refused, at the
// end or in the middle of the path; a missing tail is kept.
func TestResolveFollowsOnlyTrustedLinks(t *testing.T) {
	needRoot(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	real := mkdir(t, filepath.Join(base, "real", "docs"))
	symlink(t, "real", filepath.Join(base, "mine"), -1)
	got, err := Resolve(filepath.Join(base, "mine", "docs", "new", "deeper"), Self())
	if err != nil || got != filepath.Join(real, "new", "deeper") {
		t.Fatalf("Resolve through the user's link = %q, %v", got, err)
	}
	symlink(t, filepath.Join(base, "real"), filepath.Join(base, "planted"), other)
	for _, p := range []string{filepath.Join(base, "planted"), filepath.Join(base, "planted", "docs", "x")} {
		_, err := Resolve(p, Self())
		wantInvalid(t, err, "made by another user (uid 65534)")
	}
	if got, err := Resolve(filepath.Join(base, "planted"), Owners{other}); err != nil || got != filepath.Join(base, "real") {
		t.Errorf("a link of a trusted owner: %q, %v", got, err)
	}
}

// TestOpenDirRefusesLinksAndOtherUsers: OpenDir never follows a link in
// any component, even one root made, refuses a folder another user owns
// (and makes nothing below it), and makes what is missing.
func TestOpenDirRefusesLinksAndOtherUsers(t *testing.T) {
	needRoot(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	victim := mkdir(t, filepath.Join(base, "victim"))
	symlink(t, victim, filepath.Join(base, "link"), -1)
	_, err := OpenDir(filepath.Join(base, "link", "out"), Self(), true)
	wantInvalid(t, err, filepath.Join(base, "link")+" is a symbolic link")
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("something was made in the link's target: %v", ents)
	}

	theirs := mkdir(t, filepath.Join(base, "theirs"))
	os.Chown(theirs, other, other)
	_, err = OpenDir(filepath.Join(theirs, "out"), Self(), true)
	wantInvalid(t, err, "belongs to another user (uid 65534)")
	if _, err := os.Stat(filepath.Join(theirs, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a folder was made in another user's folder: %v", err)
	}

	d, err := OpenDir(filepath.Join(base, "mine", "out"), Self(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteFile("x", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(base, "mine", "out", "x")); err != nil || string(b) != "x" {
		t.Fatalf("wrote %q, %v", b, err)
	}
	chain, err := Chain(filepath.Join(base, "mine", "out"))
	if err != nil || len(chain) != len(d.Chain) || chain[0] != d.Chain[0] || chain[len(chain)-1] != d.Chain[len(d.Chain)-1] {
		t.Errorf("Chain %v and the walk's %v differ (%v)", chain, d.Chain, err)
	}

	chain, whole, err := CheckDir(filepath.Join(base, "mine", "later", "deeper"), Self())
	if err != nil || whole || chain[0] != d.Chain[1] {
		t.Errorf("CheckDir of a missing folder: %v %v %v", chain, whole, err)
	}
	_, _, err = CheckDir(filepath.Join(theirs, "later"), Self())
	wantInvalid(t, err, "belongs to another user")
}

// TestSubRefusesALinkInAnyElement: a guest that made a folder of its
// shared folder a link, to a host folder or to another folder inside, gets
// nothing written through it.
func TestSubRefusesALinkInAnyElement(t *testing.T) {
	shared := t.TempDir()
	outside := t.TempDir()
	mkdir(t, filepath.Join(shared, "outbox"))
	symlink(t, outside, filepath.Join(shared, "inbox"), -1)
	symlink(t, "outbox", filepath.Join(shared, "skills"), -1)
	root, err := os.OpenRoot(shared)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"inbox", "skills/x", "../x"} {
		if sub, err := Sub(root, name, 0o755, nil); err == nil {
			sub.Close()
			t.Errorf("Sub(%q) opened", name)
		}
	}
	sub, err := Sub(root, "a/b", 0o755, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub.WriteFile("f", []byte("f"), 0o644)
	sub.Close()
	if _, err := os.Stat(filepath.Join(shared, "a", "b", "f")); err != nil {
		t.Error(err)
	}
	for _, dir := range []string{outside, filepath.Join(shared, "outbox")} {
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("written through a link into %s: %v", dir, ents)
		}
	}
}

// TestFenceSeesThroughLinks: a folder reached through a symlinked parent
// is still the data folder, inside it or holding it.
func TestFenceSeesThroughLinks(t *testing.T) {
	base := t.TempDir()
	data := mkdir(t, filepath.Join(base, "home", "data"))
	mkdir(t, filepath.Join(data, "Sessions", "s1"))
	symlink(t, filepath.Join(base, "home"), filepath.Join(base, "alias"), -1)
	f, err := NewFence(Folder{"the helper's data folder", data}, Folder{"missing", filepath.Join(base, "none")})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		filepath.Join(base, "alias", "data"):                "is the helper's data folder",
		filepath.Join(base, "alias", "data", "Sessions"):    "is inside the helper's data folder",
		filepath.Join(base, "alias", "data", "Sessions/s1"): "is inside",
		filepath.Join(base, "alias"):                        "holds the helper's data folder",
	} {
		chain, err := Chain(p)
		if err != nil {
			t.Fatal(err)
		}
		wantInvalid(t, f.Check(p, chain), want)
	}
	other := mkdir(t, filepath.Join(base, "elsewhere"))
	chain, _ := Chain(other)
	if err := f.Check(other, chain); err != nil {
		t.Errorf("a folder beside the data folder: %v", err)
	}
	id, _ := Chain(filepath.Join(base, "alias", "data"))
	if d, ok := f.Holds(id[0]); !ok || d.Path != data {
		t.Errorf("Holds(the data folder) = %v %v", d, ok)
	}
}
