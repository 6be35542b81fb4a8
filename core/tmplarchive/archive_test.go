package tmplarchive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// rootfsFixture makes a small root filesystem in dir/rootfs: folders,
// files, a link into /etc, a hard link, a sparse file and a FIFO.
func rootfsFixture(t *testing.T, dir string) {
	t.Helper()
	r := filepath.Join(dir, "rootfs")
	for _, d := range []string{"usr/bin", "etc", "opt/tool", "tmp"} {
		if err := os.MkdirAll(filepath.Join(r, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(r, "tmp"), os.ModeSticky|0o777)
	write := func(rel, data string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(r, rel), []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(r, rel), mode)
	}
	write("usr/bin/tool", "#!/bin/sh\necho tool\n", 0o755)
	write("usr/bin/su", "setuid", os.ModeSetuid|0o755)
	write("etc/os-release", "PRETTY_NAME=test\n", 0o644)
	write("opt/tool/data", "guest data\n", 0o644)
	if err := os.Link(filepath.Join(r, "usr/bin/tool"), filepath.Join(r, "usr/bin/tool2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/os-release", filepath.Join(r, "usr/bin/abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/bin", filepath.Join(r, "bin")); err != nil {
		t.Fatal(err)
	}
	sparse, err := os.Create(filepath.Join(r, "opt/tool/sparse.img"))
	if err != nil {
		t.Fatal(err)
	}
	sparse.WriteAt([]byte("head"), 0)
	sparse.WriteAt([]byte("tail"), 64<<20)
	sparse.Close()
	if err := syscall.Mkfifo(filepath.Join(r, "opt/tool/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// extractAll opens the archive in r and extracts it to tg; it returns the
// manifest.
func extractAll(t *testing.T, r io.Reader, tg Target) Manifest {
	t.Helper()
	a, err := Open(r)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Extract(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	return a.Manifest()
}

func testManifest() Manifest {
	return Manifest{Name: "Desktop", OS: "linux", Kind: KindRootFS, AgentVersion: "v1.2.0", AgentPath: "/usr/local/bin/hivecrew-guestagent",
		Manifest: "linux-desktop", ManifestVersion: 4, ExportedBy: "v1.2.0"}
}

// TestRootFSRoundTrip: a root filesystem exported and imported has the
// same files, links and modes (set-id bits dropped), its hard link is one
// file, its sparse file stays sparse, and the FIFO is left out.
func TestRootFSRoundTrip(t *testing.T) {
	src := t.TempDir()
	rootfsFixture(t, src)
	var buf bytes.Buffer
	m, stats, err := Write(context.Background(), &buf, testManifest(), Source{Root: openRoot(t, src), Kind: KindRootFS, GuestUID: -1})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Skipped != 1 || m.DiskBytes <= 0 || m.Format != Format {
		t.Fatalf("stats %+v, manifest %+v", stats, m)
	}
	if buf.Len() > 1<<20 {
		t.Errorf("the archive of a 64 MB sparse file is %d bytes: holes were not compressed away", buf.Len())
	}
	dst := t.TempDir()
	if got := extractAll(t, &buf, Target{Root: openRoot(t, dst), Chown: os.Geteuid() == 0}); got.Name != "Desktop" || got.AgentVersion != "v1.2.0" || got.DiskBytes != m.DiskBytes {
		t.Fatalf("manifest read back: %+v", got)
	}
	r := filepath.Join(dst, "rootfs")
	if b, _ := os.ReadFile(filepath.Join(r, "usr/bin/tool")); string(b) != "#!/bin/sh\necho tool\n" {
		t.Errorf("tool: %q", b)
	}
	fi1, _ := os.Stat(filepath.Join(r, "usr/bin/tool"))
	fi2, _ := os.Stat(filepath.Join(r, "usr/bin/tool2"))
	if !os.SameFile(fi1, fi2) || fi1.Mode().Perm() != 0o755 {
		t.Errorf("the hard link is not one file, or its mode changed: %v %v", fi1.Mode(), fi2.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(r, "usr/bin/su")); fi.Mode()&os.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("su kept its set-id bit or lost its mode: %v", fi.Mode())
	}
	if l, _ := os.Readlink(filepath.Join(r, "usr/bin/abs-link")); l != "/etc/os-release" {
		t.Errorf("abs-link -> %q", l)
	}
	if l, _ := os.Readlink(filepath.Join(r, "bin")); l != "usr/bin" {
		t.Errorf("bin -> %q", l)
	}
	if fi, _ := os.Stat(filepath.Join(r, "tmp")); fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("tmp lost its sticky bit: %v", fi.Mode())
	}
	if _, err := os.Lstat(filepath.Join(r, "opt/tool/fifo")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the FIFO was carried: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(r, "opt/tool/sparse.img"), &st); err != nil || st.Size != 64<<20+4 || st.Blocks*512 > 1<<20 {
		t.Errorf("sparse.img: size %d, %d bytes allocated (%v)", st.Size, st.Blocks*512, err)
	}
	f, _ := os.Open(filepath.Join(r, "opt/tool/sparse.img"))
	tail := make([]byte, 4)
	f.ReadAt(tail, 64<<20)
	f.Close()
	if string(tail) != "tail" {
		t.Errorf("sparse.img's tail: %q", tail)
	}
}

// TestMacOSBundleRoundTrip: a macOS bundle's files go through, the disk
// stays sparse, and other files of the folder are left out.
func TestMacOSBundleRoundTrip(t *testing.T) {
	src := t.TempDir()
	for name, data := range map[string]string{"config.json": `{"version":1}`, "hardware-model.bin": "hw", "machine-id.bin": "id", "aux.img": "aux", "build.log": "log"} {
		os.WriteFile(filepath.Join(src, name), []byte(data), 0o600)
	}
	disk, _ := os.Create(filepath.Join(src, "disk.img"))
	disk.Truncate(1 << 30)
	disk.WriteAt([]byte("APFS"), 512<<20)
	disk.Close()
	m := Manifest{Name: "Mac", OS: "macos", Kind: KindMacOS, MemoryMB: 4096}
	var buf bytes.Buffer
	if _, _, err := Write(context.Background(), &buf, m, Source{Root: openRoot(t, src), Kind: KindMacOS, GuestUID: -1}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	extractAll(t, &buf, Target{Root: openRoot(t, dst)})
	if _, err := os.Stat(filepath.Join(dst, "build.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("build.log was carried: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dst, "disk.img"), &st); err != nil || st.Size != 1<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("disk.img: %d bytes, %d allocated (%v)", st.Size, st.Blocks*512, err)
	}
}

// entry is a raw tar entry of a crafted archive.
type entry struct {
	h    tar.Header
	data []byte
}

func reg(name string, data []byte) entry {
	return entry{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}, data}
}

// tarOf writes entries as a tar stream; size overrides a header's size
// when it is not the data's (a lying size).
func tarOf(t testing.TB, es ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range es {
		h := e.h
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if len(e.data) > 0 {
			if _, err := tw.Write(e.data); err != nil && !errors.Is(err, tar.ErrWriteTooLong) {
				t.Fatal(err)
			}
		}
	}
	tw.Flush() // no Close: a short entry stays short
	if err := tw.Close(); err != nil && !strings.Contains(err.Error(), "missed writing") {
		t.Fatal(err)
	}
	return b.Bytes()
}

func zstdOf(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := zstd.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// crafted is an archive a hostile exporter made: the manifest, the disk
// and the checksums as given (nil: correct ones).
type crafted struct {
	manifest []byte
	disk     []byte
	sums     []byte
	// diskSize overrides the disk entry's declared size.
	diskSize int64
	extra    []entry
}

func manifestJSON(t testing.TB, m Manifest) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (c crafted) bytes(t testing.TB) []byte {
	t.Helper()
	if c.manifest == nil {
		m := testManifest()
		m.Format, m.DiskBytes, m.ExportedAt = Format, int64(len(c.disk)), time.Now().UTC()
		if c.diskSize != 0 {
			m.DiskBytes = c.diskSize
		}
		c.manifest = manifestJSON(t, m)
	}
	if c.sums == nil {
		ms, ds := sha256.Sum256(c.manifest), sha256.Sum256(c.disk)
		c.sums = fmt.Appendf(nil, "%s  manifest.json\n%s  disk.tar\n", hex.EncodeToString(ms[:]), hex.EncodeToString(ds[:]))
	}
	disk := reg(DiskName, c.disk)
	if c.diskSize != 0 {
		disk.h.Size = c.diskSize
	}
	es := []entry{reg(ManifestName, c.manifest), disk}
	if c.diskSize == 0 {
		es = append(es, reg(ChecksumsName, c.sums))
		es = append(es, c.extra...)
	}
	return zstdOf(t, tarOf(t, es...))
}

func dir(name string) entry {
	return entry{tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755}, nil}
}

// TestHostileArchivesAreRefused makes the attacker's moves for real: each
// archive is refused with an error of class invalid that says why, and
// nothing lands outside the staging folder.
func TestHostileArchivesAreRefused(t *testing.T) {
	okDisk := func(extra ...entry) []byte { return tarOf(t, append([]entry{dir("rootfs")}, extra...)...) }
	bigManifest := testManifest()
	bigManifest.Description = strings.Repeat("x", 1900)
	huge := append(manifestJSON(t, bigManifest), bytes.Repeat([]byte(" "), MaxManifestBytes)...)
	unknown := []byte(`{"format":1,"name":"x","os":"linux","kind":"rootfs","diskBytes":10,"runOnImport":"rm -rf /"}`)
	cases := []struct {
		name    string
		archive func(victim string) []byte
		want    string
	}{
		{"not an archive", func(string) []byte { return []byte("PK\x03\x04 a zip file") }, "not a Hivecrew template archive"},
		{"dot-dot first entry", func(string) []byte { return zstdOf(t, tarOf(t, reg("../../victim/passwd", []byte("pwned")))) }, `climbs out with ".."`},
		{"absolute first entry", func(v string) []byte { return zstdOf(t, tarOf(t, reg(v+"/passwd", []byte("pwned")))) }, "absolute path"},
		{"symlink manifest", func(v string) []byte {
			return zstdOf(t, tarOf(t, entry{tar.Header{Typeflag: tar.TypeSymlink, Name: ManifestName, Linkname: v + "/passwd"}, nil}))
		}, "is a symbolic link"},
		{"hardlink manifest", func(v string) []byte {
			return zstdOf(t, tarOf(t, entry{tar.Header{Typeflag: tar.TypeLink, Name: ManifestName, Linkname: v + "/passwd"}, nil}))
		}, "is a hard link"},
		{"huge manifest", func(string) []byte { return zstdOf(t, tarOf(t, reg(ManifestName, huge))) }, "over its limit"},
		{"unknown manifest field", func(string) []byte { return crafted{manifest: unknown, disk: okDisk()}.bytes(t) }, `unknown field "runOnImport"`},
		{"disk size lies to the manifest", func(string) []byte {
			m := testManifest()
			m.Format, m.DiskBytes = Format, 1024
			return crafted{manifest: manifestJSON(t, m), disk: okDisk(reg("rootfs/a", bytes.Repeat([]byte("a"), 4096)))}.bytes(t)
		}, "a size that lies"},
		{"file larger than the disk", func(string) []byte {
			d := okDisk(entry{tar.Header{Typeflag: tar.TypeReg, Name: "rootfs/big", Size: 1 << 40, Mode: 0o644}, []byte("x")})
			return crafted{disk: d}.bytes(t)
		}, "more than the whole disk"},
		{"disk entry ends early", func(string) []byte {
			return crafted{disk: okDisk(reg("rootfs/a", []byte("abc"))), diskSize: 1 << 20}.bytes(t)
		}, "ends early"},
		{"file entry ends early", func(string) []byte {
			d := okDisk(reg("rootfs/pad", bytes.Repeat([]byte("p"), 10000)), entry{tar.Header{Typeflag: tar.TypeReg, Name: "rootfs/a", Size: 8192, Mode: 0o644}, []byte("abc")})
			return crafted{disk: d}.bytes(t)
		}, "ends early"},
		{"bad checksum", func(string) []byte {
			return crafted{disk: okDisk(reg("rootfs/a", []byte("abc"))), sums: []byte(strings.Repeat("0", 64) + "  manifest.json\n" + strings.Repeat("0", 64) + "  disk.tar\n")}.bytes(t)
		}, "checksum of"},
		{"dot-dot inside the disk", func(string) []byte {
			return crafted{disk: okDisk(reg("rootfs/../../../victim/passwd", []byte("pwned")))}.bytes(t)
		}, `climbs out`},
		{"absolute inside the disk", func(v string) []byte { return crafted{disk: okDisk(reg(v+"/passwd", []byte("pwned")))}.bytes(t) }, "absolute path"},
		{"outside rootfs", func(string) []byte { return crafted{disk: okDisk(reg("evil", []byte("pwned")))}.bytes(t) }, "outside rootfs/"},
		{"through a symlink", func(v string) []byte {
			return crafted{disk: okDisk(entry{tar.Header{Typeflag: tar.TypeSymlink, Name: "rootfs/etc", Linkname: v}, nil}, reg("rootfs/etc/passwd", []byte("pwned")))}.bytes(t)
		}, "goes through the symbolic link"},
		{"symlink then a file in its place", func(v string) []byte {
			return crafted{disk: okDisk(entry{tar.Header{Typeflag: tar.TypeSymlink, Name: "rootfs/passwd", Linkname: v + "/passwd"}, nil}, reg("rootfs/passwd", []byte("pwned")))}.bytes(t)
		}, "comes twice"},
		{"hard link out", func(v string) []byte {
			return crafted{disk: okDisk(entry{tar.Header{Typeflag: tar.TypeLink, Name: "rootfs/passwd", Linkname: v + "/passwd"}, nil})}.bytes(t)
		}, "outside the archive"},
		{"hard link up", func(string) []byte {
			return crafted{disk: okDisk(entry{tar.Header{Typeflag: tar.TypeLink, Name: "rootfs/passwd", Linkname: "rootfs/../../victim/passwd"}, nil})}.bytes(t)
		}, "outside the archive"},
		{"hard link to a link", func(v string) []byte {
			return crafted{disk: okDisk(entry{tar.Header{Typeflag: tar.TypeSymlink, Name: "rootfs/l", Linkname: v + "/passwd"}, nil},
				entry{tar.Header{Typeflag: tar.TypeLink, Name: "rootfs/passwd", Linkname: "rootfs/l"}, nil})}.bytes(t)
		}, "not a file this archive wrote"},
		{"device node", func(string) []byte {
			return crafted{disk: okDisk(entry{tar.Header{Typeflag: tar.TypeBlock, Name: "rootfs/sda", Devmajor: 8, Mode: 0o666}, nil})}.bytes(t)
		}, "a block device"},
		{"before its folder", func(string) []byte { return crafted{disk: okDisk(reg("rootfs/usr/bin/x", []byte("x")))}.bytes(t) }, "before its folder"},
		{"duplicate file names", func(string) []byte {
			return crafted{disk: okDisk(reg("rootfs/a", []byte("first")), reg("rootfs/a", []byte("second")))}.bytes(t)
		}, "comes twice"},
		{"duplicate folder names", func(string) []byte { return crafted{disk: okDisk(dir("rootfs/etc"), dir("rootfs/etc"))}.bytes(t) }, "comes twice"},
		{"truncated archive", func(string) []byte {
			full := crafted{disk: okDisk(reg("rootfs/a", bytes.Repeat([]byte("0123456789abcdef"), 8192)))}.bytes(t)
			return full[:len(full)*2/3]
		}, "ends early"},
		{"entry after the checksums", func(v string) []byte {
			return crafted{disk: okDisk(), extra: []entry{reg("../victim/passwd", []byte("pwned"))}}.bytes(t)
		}, "after the checksums"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			victim := filepath.Join(base, "victim")
			os.MkdirAll(victim, 0o755)
			os.WriteFile(filepath.Join(victim, "passwd"), []byte("root:x:0:0\n"), 0o644)
			staging := filepath.Join(base, "Templates", "import.partial")
			os.MkdirAll(staging, 0o700)
			var err error
			a, err := Open(bytes.NewReader(c.archive(victim)))
			if err == nil {
				err = a.Extract(context.Background(), Target{Root: openRoot(t, staging), Chown: os.Geteuid() == 0})
				a.Close()
			}
			if err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an invalid error saying %q", err, c.want)
			}
			if b, _ := os.ReadFile(filepath.Join(victim, "passwd")); string(b) != "root:x:0:0\n" {
				t.Errorf("the victim's file changed: %q", b)
			}
			ents, _ := os.ReadDir(victim)
			if len(ents) != 1 {
				t.Errorf("the victim's folder gained files: %v", ents)
			}
			outside, _ := os.ReadDir(filepath.Join(base, "Templates"))
			if len(outside) != 1 {
				t.Errorf("the templates folder holds more than the staging folder: %v", outside)
			}
		})
	}
}

// TestOwnersAreRootOrTheGuest: the guest's files (the exporter's sandbox
// account) become this helper's guest account's; every other owner
// becomes root.
func TestOwnersAreRootOrTheGuest(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("owners are set by a root helper only; run as root")
	}
	src := t.TempDir()
	rootfsFixture(t, src)
	r := filepath.Join(src, "rootfs")
	os.Lchown(filepath.Join(r, "opt/tool"), 4242, 4242)
	os.Lchown(filepath.Join(r, "opt/tool/data"), 4242, 4242)
	os.Lchown(filepath.Join(r, "etc/os-release"), 1234, 1234) // another account
	var buf bytes.Buffer
	if _, _, err := Write(context.Background(), &buf, testManifest(), Source{Root: openRoot(t, src), Kind: KindRootFS, GuestUID: 4242}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	extractAll(t, &buf, Target{Root: openRoot(t, dst), Chown: true, Guest: &Owner{UID: 5151, GID: 5152}})
	for rel, want := range map[string][2]uint32{"opt/tool": {5151, 5152}, "opt/tool/data": {5151, 5152}, "etc/os-release": {0, 0}, "usr/bin/tool": {0, 0}} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dst, "rootfs", rel), &st); err != nil || st.Uid != want[0] || st.Gid != want[1] {
			t.Errorf("%s is %d:%d, want %d:%d (%v)", rel, st.Uid, st.Gid, want[0], want[1], err)
		}
	}
}

// TestExportFollowsNoLink: a bundle file that is a link (to a file of
// another user, say) is refused, not read.
func TestExportFollowsNoLink(t *testing.T) {
	src := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("another user's file"), 0o600)
	for _, name := range []string{"config.json", "hardware-model.bin", "aux.img"} {
		os.WriteFile(filepath.Join(src, name), []byte("x"), 0o600)
	}
	os.Symlink(secret, filepath.Join(src, "disk.img"))
	var buf bytes.Buffer
	_, _, err := Write(context.Background(), &buf, Manifest{Name: "Mac", OS: "macos", Kind: KindMacOS}, Source{Root: openRoot(t, src), Kind: KindMacOS, GuestUID: -1})
	if err == nil || !strings.Contains(err.Error(), "disk.img is not a regular file") {
		t.Fatalf("a linked disk.img: %v", err)
	}
	if bytes.Contains(buf.Bytes(), []byte("another user")) {
		t.Error("the link's target was read into the archive")
	}
}
