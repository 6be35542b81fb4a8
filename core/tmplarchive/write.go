package tmplarchive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Source is a template's folder to export.
type Source struct {
	// Root is the template's folder (for rootfs templates, the folder that
	// holds rootfs/).
	Root *os.Root
	// Kind is KindRootFS or KindMacOS.
	Kind string
	// GuestUID is the account whose files are the guest's (recorded as
	// the guest's, whatever its number here); -1 for none.
	GuestUID int
}

// Stats says what an export left out.
type Stats struct {
	Entries int
	// Skipped counts device nodes, FIFOs and sockets (a sandbox gets its
	// own /dev; the others belong to processes that are gone).
	Skipped int
}

// guestName is the owner name of the guest's files in an archive.
const guestName = "guest"

// Write writes the archive of src to w: m with its format, disk size and
// export time filled in, the disk, the checksums. It reads the folder's
// names once to measure the disk and once to write it; a folder that
// changed between the two makes it fail.
func Write(ctx context.Context, w io.Writer, m Manifest, src Source) (Manifest, Stats, error) {
	var count countWriter
	if _, err := writeDisk(ctx, &count, src, true); err != nil {
		return Manifest{}, Stats{}, err
	}
	m.Format, m.DiskBytes = Format, count.n
	if m.ExportedAt.IsZero() {
		m.ExportedAt = time.Now().UTC().Truncate(time.Second)
	}
	if err := m.Check(); err != nil {
		return Manifest{}, Stats{}, err
	}
	man, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, Stats{}, err
	}
	man = append(man, '\n')
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(2))
	if err != nil {
		return Manifest{}, Stats{}, err
	}
	tw := tar.NewWriter(zw)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: m.ExportedAt}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put(ManifestName, man); err != nil {
		zw.Close()
		return Manifest{}, Stats{}, err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: DiskName, Mode: 0o644, Size: m.DiskBytes, ModTime: m.ExportedAt}); err != nil {
		zw.Close()
		return Manifest{}, Stats{}, err
	}
	sum := sha256.New()
	stats, err := writeDisk(ctx, io.MultiWriter(tw, sum), src, false)
	if err == nil {
		err = put(ChecksumsName, checksums(sha256.Sum256(man), sum))
	}
	if err == nil {
		err = tw.Close()
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Manifest{}, Stats{}, fmt.Errorf("write the archive: %w", err)
	}
	return m, stats, nil
}

// checksums is SHA256SUMS's text.
func checksums(man [32]byte, disk hash.Hash) []byte {
	return fmt.Appendf(nil, "%s  %s\n%s  %s\n", hex.EncodeToString(man[:]), ManifestName, hex.EncodeToString(disk.Sum(nil)), DiskName)
}

// countWriter counts what it is given and keeps none of it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// diskWriter writes disk.tar; dry writes zeros for the data (to measure).
type diskWriter struct {
	ctx   context.Context
	src   Source
	tw    *tar.Writer
	dry   bool
	seen  map[[2]uint64]string // device and inode -> first name, for hard links
	stats Stats
	buf   []byte
}

func writeDisk(ctx context.Context, w io.Writer, src Source, dry bool) (Stats, error) {
	d := &diskWriter{ctx: ctx, src: src, tw: tar.NewWriter(w), dry: dry, seen: map[[2]uint64]string{}, buf: make([]byte, 1<<20)}
	var err error
	switch src.Kind {
	case KindRootFS:
		err = d.tree("rootfs")
	case KindMacOS:
		err = d.bundle()
	default:
		err = errdefs.Unsupportedf("templates of kind %q are not exported", src.Kind)
	}
	if err == nil {
		err = d.tw.Close()
	}
	return d.stats, err
}

// bundle writes a macOS bundle's files.
func (d *diskWriter) bundle() error {
	for _, f := range BundleFiles() {
		fi, err := d.src.Root.Lstat(f.Name)
		if errors.Is(err, fs.ErrNotExist) && !f.Required {
			continue
		}
		if err != nil {
			return fmt.Errorf("the template's %s: %w", f.Name, err)
		}
		if !fi.Mode().IsRegular() {
			return errdefs.Invalidf("the template's %s is not a regular file: it is not exported", f.Name)
		}
		if err := d.file(f.Name, fi); err != nil {
			return err
		}
	}
	return nil
}

// tree writes the folder rel and what it holds, never following a link.
func (d *diskWriter) tree(rel string) error {
	fi, err := d.src.Root.Lstat(rel)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errdefs.Invalidf("the template's %s is not a folder", rel)
	}
	if err := d.header(rel+"/", tar.TypeDir, fi, 0, ""); err != nil {
		return err
	}
	dir, err := d.src.Root.Open(rel)
	if err != nil {
		return err
	}
	ents, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return fmt.Errorf("list %s: %w", rel, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int {
		if a.Name() < b.Name() {
			return -1
		}
		return 1
	})
	for _, e := range ents {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		name := path.Join(rel, e.Name())
		fi, err := d.src.Root.Lstat(name)
		if err != nil {
			return err
		}
		switch t := fi.Mode().Type(); {
		case t == 0:
			err = d.file(name, fi)
		case t == fs.ModeDir:
			err = d.tree(name)
		case t == fs.ModeSymlink:
			var target string
			if target, err = d.src.Root.Readlink(name); err == nil {
				err = d.header(name, tar.TypeSymlink, fi, 0, target)
			}
		default:
			d.stats.Skipped++
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// file writes a regular file (a hard link to the first name of a file
// with several).
func (d *diskWriter) file(name string, fi fs.FileInfo) error {
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st != nil && uint64(st.Nlink) > 1 {
		key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
		if first, ok := d.seen[key]; ok {
			return d.header(name, tar.TypeLink, fi, 0, first)
		}
		d.seen[key] = name
	}
	if d.dry {
		if err := d.header(name, tar.TypeReg, fi, fi.Size(), ""); err != nil {
			return err
		}
		_, err := io.CopyN(d.tw, zeros{}, fi.Size())
		return err
	}
	f, err := d.src.Root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	now, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(fi, now) || !now.Mode().IsRegular() || now.Size() != fi.Size() {
		return errdefs.Conflictf("%s changed while it was being exported", name)
	}
	if err := d.header(name, tar.TypeReg, fi, fi.Size(), ""); err != nil {
		return err
	}
	n, err := io.CopyBuffer(d.tw, newSparseReader(d.ctx, f, fi.Size()), d.buf)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if n != fi.Size() {
		return errdefs.Conflictf("%s changed while it was being exported", name)
	}
	return nil
}

// header writes one entry's header.
func (d *diskWriter) header(name string, typ byte, fi fs.FileInfo, size int64, link string) error {
	d.stats.Entries++
	h := &tar.Header{Typeflag: typ, Name: name, Linkname: link, Size: size, ModTime: fi.ModTime().Truncate(time.Second),
		Mode: int64(fi.Mode().Perm()), Format: tar.FormatPAX}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		h.Mode = int64(st.Mode & 0o7777)
		if d.src.GuestUID >= 0 && int(st.Uid) == d.src.GuestUID {
			h.Uid, h.Gid, h.Uname, h.Gname = 1000, 1000, guestName, guestName
		}
	}
	if err := d.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// zeros reads as zeros.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
