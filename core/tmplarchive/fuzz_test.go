package tmplarchive

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzExtractStaysInItsFolder feeds the disk stream of an archive (the
// tar of the template's files, the part a hostile exporter shapes most)
// to Open and Extract, with a manifest and checksums that match it so the
// reader goes all the way. Whatever the entries (links, names, sizes,
// types), nothing panics and nothing is written outside the staging
// folder: the folder beside it stays as it was.
func FuzzExtractStaysInItsFolder(f *testing.F) {
	seed := func(es ...entry) []byte { return tarOf(f, append([]entry{dir("rootfs")}, es...)...) }
	f.Add(seed(reg("rootfs/a.txt", []byte("hello")), dir("rootfs/etc")))
	f.Add(seed(entry{tar.Header{Typeflag: tar.TypeSymlink, Name: "rootfs/out", Linkname: "../../victim"}, nil}, reg("rootfs/out/passwd", []byte("pwned"))))
	f.Add(seed(reg("rootfs/a", []byte("abc")), entry{tar.Header{Typeflag: tar.TypeLink, Name: "rootfs/b", Linkname: "rootfs/a"}, nil}))
	f.Add(seed(reg("../victim/passwd", []byte("pwned"))))
	f.Add(seed(entry{tar.Header{Typeflag: tar.TypeReg, Name: "rootfs/big", Size: 1 << 40, Mode: 0o644}, []byte("x")}))
	f.Add([]byte("not a tar at all"))
	f.Fuzz(func(t *testing.T, disk []byte) {
		base := t.TempDir()
		victim := filepath.Join(base, "victim")
		if err := os.Mkdir(victim, 0o700); err != nil {
			t.Fatal(err)
		}
		stage := filepath.Join(base, "stage")
		if err := os.Mkdir(stage, 0o700); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(stage)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		a, err := Open(bytes.NewReader(crafted{disk: disk}.bytes(t)))
		if err == nil {
			_ = a.Extract(context.Background(), Target{Root: root}) // refusals are expected
			a.Close()
		}
		if left, _ := os.ReadDir(victim); len(left) != 0 {
			t.Fatalf("the extraction wrote beside its folder: %v", left)
		}
		if all, _ := os.ReadDir(base); len(all) != 2 {
			t.Fatalf("the extraction made %d entries beside its folder", len(all)-2)
		}
	})
}
