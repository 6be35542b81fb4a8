package tmplarchive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// zstdMagic begins every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxWindow bounds the decoder's memory (a frame may ask for more).
const maxWindow = 64 << 20

// Archive is an archive being read: its manifest is read and checked, its
// disk not yet.
type Archive struct {
	zr       *zstd.Decoder
	tr       *tar.Reader
	manifest Manifest
	manSum   [32]byte
	done     bool
}

// Open reads an archive's manifest. It refuses what is not a template
// archive, a first entry that is not manifest.json (a link, a folder, a
// name that leaves the archive), a manifest over MaxManifestBytes and one
// that does not check out. Close the archive when done.
func Open(r io.Reader) (*Archive, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(len(zstdMagic))
	if err != nil || !bytes.Equal(head, zstdMagic) {
		return nil, errdefs.Invalidf("this is not a Hivecrew template archive (a zstd-compressed tar stream)")
	}
	zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderMaxMemory(1<<40))
	if err != nil {
		return nil, fmt.Errorf("read the archive: %w", err)
	}
	a := &Archive{zr: zr, tr: tar.NewReader(zr)}
	data, err := a.entry(ManifestName, MaxManifestBytes)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.manSum = sha256.Sum256(data)
	if a.manifest, err = decodeManifest(data); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// Manifest is the archive's checked manifest.
func (a *Archive) Manifest() Manifest { return a.manifest }

// Close releases the decoder.
func (a *Archive) Close() { a.zr.Close() }

// next reads the next top-level entry, which must be the regular file want
// of at most max bytes (0: any size); its header is returned.
func (a *Archive) next(want string, max int64) (*tar.Header, error) {
	h, err := a.tr.Next()
	if errors.Is(err, io.EOF) {
		return nil, errdefs.Invalidf("the archive ends before its %s (truncated?)", want)
	}
	if err != nil {
		return nil, readErr(err, "before "+want)
	}
	if err := checkTop(h, want); err != nil {
		return nil, err
	}
	if max > 0 && h.Size > max {
		return nil, errdefs.Invalidf("the archive's %s is %d bytes, over its limit of %d: refused", want, h.Size, max)
	}
	return h, nil
}

// entry reads a small top-level entry whole.
func (a *Archive) entry(want string, max int64) ([]byte, error) {
	h, err := a.next(want, max)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(a.tr)
	if err != nil {
		return nil, readErr(err, "in "+want)
	}
	if int64(len(data)) != h.Size {
		return nil, errdefs.Invalidf("the archive's %s is shorter than its header says", want)
	}
	return data, nil
}

// checkTop refuses a top-level entry that is not the regular file want.
func checkTop(h *tar.Header, want string) error {
	if err := checkEntryName(h.Name); err != nil {
		return err
	}
	if k := kindOf(h.Typeflag); k != "a regular file" {
		return errdefs.Invalidf("archive entry %q is %s: an archive's entries are regular files only (refused)", clip(h.Name), k)
	}
	if h.Name != want {
		return errdefs.Invalidf("archive entry %q where %s was expected (refused)", clip(h.Name), want)
	}
	return nil
}

// checkEntryName refuses a name that is absolute, climbs out with "..",
// is not clean, or is too long.
func checkEntryName(name string) error {
	switch {
	case name == "" || len(name) > maxNameBytes || strings.ContainsRune(name, 0):
		return errdefs.Invalidf("archive entry %q: an empty, overlong or NUL-bearing name (refused)", clip(name))
	case strings.HasPrefix(name, "/"):
		return errdefs.Invalidf("archive entry %q is an absolute path: it would leave the templates folder (refused)", clip(name))
	}
	for _, e := range strings.Split(name, "/") {
		switch e {
		case "..":
			return errdefs.Invalidf("archive entry %q climbs out with \"..\": it would leave the templates folder (refused)", clip(name))
		case "", ".":
			return errdefs.Invalidf("archive entry %q is not a clean path (refused)", clip(name))
		}
		if len(e) > 255 {
			return errdefs.Invalidf("archive entry %q has a name over 255 bytes (refused)", clip(name))
		}
	}
	return nil
}

// kindOf names an entry type for messages.
func kindOf(t byte) string {
	switch t {
	case tar.TypeReg, tar.TypeRegA:
		return "a regular file"
	case tar.TypeDir:
		return "a folder"
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar:
		return "a character device"
	case tar.TypeBlock:
		return "a block device"
	case tar.TypeFifo:
		return "a FIFO"
	case tar.TypeGNUSparse:
		return "a sparse file of the GNU format"
	}
	return fmt.Sprintf("an entry of type %q", t)
}

// readErr says how reading the archive failed: an archive that ends
// early, or one that cannot be decoded (invalid); the caller's own end
// (a cancelled context) as it is.
func readErr(err error, where string) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errdefs.Invalidf("the archive ends early %s: it is truncated or an entry's size lies", where)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return errdefs.Invalidf("the archive cannot be read %s: %v", where, err)
}

// Target is where Extract writes a template's files.
type Target struct {
	// Root is an empty folder the caller made (the staging folder).
	Root *os.Root
	// Chown gives the files to root, and the guest's to Guest; without it
	// they stay the helper's (a helper that is not root).
	Chown bool
	// Guest is the account that gets the guest's files (nil: root).
	Guest *Owner
}

// Owner is a host account.
type Owner struct{ UID, GID int }

// Extract writes the archive's disk beneath t.Root, checks the checksums
// and that nothing follows them. On error, what was written stays for the
// caller to remove with its folder.
func (a *Archive) Extract(ctx context.Context, t Target) error {
	if a.done {
		return errors.New("the archive was extracted already")
	}
	a.done = true
	h, err := a.next(DiskName, 0)
	if err != nil {
		return err
	}
	if h.Size != a.manifest.DiskBytes {
		return errdefs.Invalidf("the archive's %s is %d bytes but its manifest declares %d: a size that lies (refused)", DiskName, h.Size, a.manifest.DiskBytes)
	}
	sum := sha256.New()
	disk := io.TeeReader(a.tr, sum)
	x := newExtractor(ctx, t, a.manifest)
	if err := x.run(disk); err != nil {
		return err
	}
	// What follows the disk's own end (its padding) is checksummed too.
	if _, err := io.Copy(sum, a.tr); err != nil {
		return readErr(err, "in "+DiskName)
	}
	return a.verify(sum)
}

// verify reads SHA256SUMS, compares it and checks the archive ends there.
func (a *Archive) verify(disk hash.Hash) error {
	data, err := a.entry(ChecksumsName, maxChecksumBytes)
	if err != nil {
		return err
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			return errdefs.Invalidf("the archive's %s has a line that is not \"SHA256  NAME\": %q", ChecksumsName, clip(line))
		}
		want[name] = strings.ToLower(sum)
	}
	for name, got := range map[string]string{ManifestName: hex.EncodeToString(a.manSum[:]), DiskName: hex.EncodeToString(disk.Sum(nil))} {
		if w, ok := want[name]; !ok {
			return errdefs.Invalidf("the archive's %s has no checksum of %s", ChecksumsName, name)
		} else if w != got {
			return errdefs.Invalidf("the checksum of %s does not match (%s in the archive, %s read): the archive is damaged or was altered (refused)", name, w, got)
		}
	}
	if len(want) != 2 {
		return errdefs.Invalidf("the archive's %s names other files", ChecksumsName)
	}
	h, err := a.tr.Next()
	if err == nil {
		return errdefs.Invalidf("archive entry %q after the checksums: nothing may follow them (refused)", clip(h.Name))
	}
	if !errors.Is(err, io.EOF) {
		return readErr(err, "after the checksums")
	}
	return nil
}
