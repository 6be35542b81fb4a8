//go:build unix

package tmplarchive

import (
	"context"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// sparseReader reads a file of size bytes, giving zeros for its holes
// without reading them: the file system says where data is (SEEK_DATA,
// SEEK_HOLE). Where it cannot, the file is read as it is.
type sparseReader struct {
	ctx       context.Context
	f         *os.File
	size, off int64
	dataEnd   int64 // the data region at off ends here
	holeEnd   int64 // the hole at off ends here
	noExtents bool
}

func newSparseReader(ctx context.Context, f *os.File, size int64) *sparseReader {
	return &sparseReader{ctx: ctx, f: f, size: size}
}

// Read reads on while ctx lasts.
func (s *sparseReader) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	if s.off >= s.size {
		return 0, io.EOF
	}
	if rest := s.size - s.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	if !s.noExtents && s.off >= s.dataEnd && s.off >= s.holeEnd {
		s.locate()
	}
	if s.off < s.holeEnd {
		n := min(int64(len(p)), s.holeEnd-s.off)
		clear(p[:n])
		s.off += n
		return int(n), nil
	}
	if !s.noExtents {
		p = p[:min(int64(len(p)), s.dataEnd-s.off)]
	}
	n, err := s.f.ReadAt(p, s.off)
	s.off += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // the file shrank
	}
	return n, err
}

// locate finds the data region or hole at s.off.
func (s *sparseReader) locate() {
	fd := int(s.f.Fd())
	data, err := unix.Seek(fd, s.off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO): // a hole to the end
		s.holeEnd = s.size
		return
	case err != nil:
		s.noExtents = true
		return
	case data > s.off:
		s.holeEnd = min(data, s.size)
		return
	}
	hole, err := unix.Seek(fd, s.off, unix.SEEK_HOLE)
	if err != nil {
		s.noExtents = true
		return
	}
	s.dataEnd = min(hole, s.size)
	if s.dataEnd <= s.off {
		s.noExtents = true
	}
}
