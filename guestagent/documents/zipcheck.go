package documents

import (
	"archive/zip"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Bounds of a zip container (an Office or OpenDocument file), checked on
// its central directory before any tool opens it.
const (
	// MaxZipEntries bounds its entries.
	MaxZipEntries = 10_000
	// MaxZipExpanded bounds what its entries expand to, all together.
	MaxZipExpanded = 512 << 20
	// MaxZipRatio bounds how much one entry of more than zipRatioFloor
	// bytes expands (XML compresses some 10 to 1; a zip bomb's parts a
	// thousand to one or more).
	MaxZipRatio   = 200
	zipRatioFloor = 1 << 20
)

// CheckZip reads the central directory of the zip container r (of size
// bytes) and refuses one whose entries, as declared, are too many or
// expand too far: a zip bomb. Entries whose data lie about their size
// are the tools' to meet, within their memory, output and time.
func CheckZip(r io.ReaderAt, size int64, name string) error {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return protocol.Errorf(protocol.CodeUnsupported, "%s is not a readable zip container, as its format needs: %v", name, err)
	}
	if len(z.File) > MaxZipEntries {
		return protocol.Errorf(protocol.CodeTooLarge, "%s has %d parts, more than the %d read_file opens: refused (a zip bomb?)", name, len(z.File), MaxZipEntries)
	}
	var total uint64
	for _, f := range z.File {
		n := f.UncompressedSize64
		if n > zipRatioFloor && n/max(f.CompressedSize64, 1) > MaxZipRatio {
			return protocol.Errorf(protocol.CodeTooLarge, "%s: its part %s would expand %s to %s, more than %d to 1: refused as a zip bomb",
				name, clip(f.Name, 80), human(int64(f.CompressedSize64)), human(int64(min(n, 1<<62))), MaxZipRatio)
		}
		if total += n; total > MaxZipExpanded {
			return protocol.Errorf(protocol.CodeTooLarge, "%s: its parts would expand to more than %s (at %s): refused as a zip bomb",
				name, human(MaxZipExpanded), clip(f.Name, 80))
		}
	}
	return nil
}

// human says a size in bytes, KB, MB or GB.
func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// clip cuts s to n bytes, on a character boundary, for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutRunes(s, n) + "…"
}

// cutRunes cuts s to at most n bytes, on a character boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
