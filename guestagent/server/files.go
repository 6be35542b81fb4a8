package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Size caps of the file tools. Both stay well under the protocol's line cap
// once base64-encoded.
const (
	DefaultReadCap = 16 << 20
	MaxWriteBytes  = 32 << 20
)

// files implements the file tools on the shared folder. Every access goes
// through an os.Root, so neither ".." nor a symlink can lead outside it, even
// if the folder changes between the check and the use.
type files struct {
	root *os.Root
	// dirs are the absolute spellings of the shared folder (as given and with
	// symlinks resolved) that absolute paths may start with.
	dirs []string
}

func openFiles(shared string) (*files, error) {
	root, err := os.OpenRoot(shared)
	if err != nil {
		return nil, err
	}
	dirs := []string{shared}
	if real, err := filepath.EvalSymlinks(shared); err == nil && real != shared {
		dirs = append(dirs, real)
	}
	return &files{root: root, dirs: dirs}, nil
}

func (f *files) Close() error { return f.root.Close() }

func outside(p string) error {
	return protocol.Errorf(protocol.CodePermissionDenied, "path %q is outside the shared folder", p)
}

// rel maps a tool's path (absolute inside the share, or relative to it) to a
// path relative to the share, refusing anything that leaves it lexically.
func (f *files) rel(p string) (string, error) {
	if p == "" {
		return "", protocol.Errorf(protocol.CodeInvalidParams, "path is required")
	}
	if strings.ContainsRune(p, 0) {
		return "", protocol.Errorf(protocol.CodeInvalidParams, "path contains a NUL byte")
	}
	if filepath.IsAbs(p) {
		clean := filepath.Clean(p)
		for _, d := range f.dirs {
			if r, err := filepath.Rel(d, clean); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
				return r, nil
			}
		}
		return "", outside(p)
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", outside(p)
	}
	return clean, nil
}

// fsError turns an os.Root error into a protocol error; escapes through a
// symlink become permission errors.
func fsError(p string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "escapes") {
		return protocol.Errorf(protocol.CodePermissionDenied, "path %q leads outside the shared folder (through a symlink or ..)", p)
	}
	var pe *fs.PathError
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Op + " " + p + ": " + pe.Err.Error()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return protocol.Errorf(protocol.CodeNotFound, "%s", msg)
	case errors.Is(err, fs.ErrExist):
		return protocol.Errorf(protocol.CodeConflict, "%s", msg)
	case errors.Is(err, fs.ErrPermission):
		return protocol.Errorf(protocol.CodePermissionDenied, "%s", msg)
	}
	return protocol.Errorf(protocol.CodeInternalError, "%s", msg)
}

func (f *files) read(p protocol.ReadFileParams) (protocol.ReadFileResult, error) {
	rel, err := f.rel(p.Path)
	if err != nil {
		return protocol.ReadFileResult{}, err
	}
	limit := p.MaxBytes
	if limit <= 0 || limit > DefaultReadCap {
		limit = DefaultReadCap
	}
	file, err := f.root.Open(rel)
	if err != nil {
		return protocol.ReadFileResult{}, fsError(p.Path, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return protocol.ReadFileResult{}, fsError(p.Path, err)
	}
	if fi.IsDir() {
		return protocol.ReadFileResult{}, protocol.Errorf(protocol.CodeInvalidParams, "%s is a folder: use list_directory", p.Path)
	}
	data, err := io.ReadAll(io.LimitReader(file, limit))
	if err != nil {
		return protocol.ReadFileResult{}, fsError(p.Path, err)
	}
	res := protocol.ReadFileResult{Size: fi.Size(), Truncated: int64(len(data)) < fi.Size()}
	if isText(data) {
		s := string(data)
		res.Contents = &s
	} else {
		res.Base64 = data
	}
	return res, nil
}

// isText reports whether data reads as UTF-8 text. A multi-byte character cut
// by a size limit at the very end does not make it binary.
func isText(data []byte) bool {
	if bytes.IndexByte(data, 0) >= 0 {
		return false
	}
	if utf8.Valid(data) {
		return true
	}
	for cut := 1; cut < utf8.UTFMax && cut <= len(data); cut++ {
		if utf8.Valid(data[:len(data)-cut]) {
			return !utf8.FullRune(data[len(data)-cut:])
		}
	}
	return false
}

func (f *files) write(p protocol.WriteFileParams) (protocol.WriteFileResult, error) {
	rel, err := f.rel(p.Path)
	if err != nil {
		return protocol.WriteFileResult{}, err
	}
	if rel == "." {
		return protocol.WriteFileResult{}, protocol.Errorf(protocol.CodeInvalidParams, "path names the shared folder itself, not a file")
	}
	var data []byte
	switch {
	case p.Contents != nil && p.Base64 != nil:
		return protocol.WriteFileResult{}, protocol.Errorf(protocol.CodeInvalidParams, "give contents or base64, not both")
	case p.Contents != nil:
		data = []byte(*p.Contents)
	case p.Base64 != nil:
		data = p.Base64
	default:
		return protocol.WriteFileResult{}, protocol.Errorf(protocol.CodeInvalidParams, "contents or base64 is required")
	}
	if len(data) > MaxWriteBytes {
		return protocol.WriteFileResult{}, protocol.Errorf(protocol.CodeTooLarge, "%d bytes is over the %d-byte limit of write_file", len(data), MaxWriteBytes)
	}
	if dir := path.Dir(filepath.ToSlash(rel)); dir != "." {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return protocol.WriteFileResult{}, fsError(p.Path, err)
		}
	}
	// Write a temporary file beside the target and rename it into place, so
	// nobody (the host collecting outbox/ included) sees half a file.
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".hivecrew-"+hex.EncodeToString(suffix[:]))
	file, err := f.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return protocol.WriteFileResult{}, fsError(p.Path, err)
	}
	_, werr := file.Write(data)
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = f.root.Rename(tmp, rel)
	}
	if werr != nil {
		f.root.Remove(tmp)
		return protocol.WriteFileResult{}, fsError(p.Path, werr)
	}
	return protocol.WriteFileResult{Size: int64(len(data))}, nil
}

func (f *files) list(p protocol.ListDirectoryParams) (protocol.ListDirectoryResult, error) {
	dirPath := p.Path
	if dirPath == "" {
		dirPath = "."
	}
	rel, err := f.rel(dirPath)
	if err != nil {
		return protocol.ListDirectoryResult{}, err
	}
	dir, err := f.root.Open(rel)
	if err != nil {
		return protocol.ListDirectoryResult{}, fsError(dirPath, err)
	}
	defer dir.Close()
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return protocol.ListDirectoryResult{}, fsError(dirPath, err)
	}
	out := protocol.ListDirectoryResult{Entries: make([]protocol.DirEntry, 0, len(ents))}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			continue // removed while listing
		}
		out.Entries = append(out.Entries, protocol.DirEntry{
			Name: e.Name(), IsDir: e.IsDir(), Size: info.Size(), Modified: info.ModTime().UTC(),
		})
	}
	slices.SortFunc(out.Entries, func(a, b protocol.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *files) move(p protocol.MoveFileParams) error {
	src, err := f.rel(p.Source)
	if err != nil {
		return err
	}
	dst, err := f.rel(p.Destination)
	if err != nil {
		return err
	}
	if src == "." || dst == "." {
		return protocol.Errorf(protocol.CodeInvalidParams, "the shared folder itself cannot be moved or replaced")
	}
	if _, err := f.root.Lstat(src); err != nil {
		return fsError(p.Source, err)
	}
	if _, err := f.root.Lstat(dst); err == nil {
		return protocol.Errorf(protocol.CodeConflict, "%s already exists: move it away or choose another name", p.Destination)
	}
	if dir := path.Dir(filepath.ToSlash(dst)); dir != "." {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return fsError(p.Destination, err)
		}
	}
	return fsError(p.Source, f.root.Rename(src, dst))
}

// readDocument answers read_document: the file, opened through the root,
// read by the server's documents.Reader.
func (s *Server) readDocument(ctx context.Context, p protocol.ReadDocumentParams) (protocol.DocumentResult, error) {
	f, err := s.shared()
	if err != nil {
		return protocol.DocumentResult{}, err
	}
	rel, err := f.rel(p.Path)
	if err != nil {
		return protocol.DocumentResult{}, err
	}
	// Without blocking: a FIFO planted under the name would otherwise
	// hold the call until someone writes to it.
	file, err := f.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return protocol.DocumentResult{}, fsError(p.Path, err)
	}
	defer file.Close()
	if fi, err := file.Stat(); err == nil && fi.IsDir() {
		return protocol.DocumentResult{}, protocol.Errorf(protocol.CodeInvalidParams, "%s is a folder: use list_directory", p.Path)
	}
	return s.docs.Read(ctx, file, p.Path, p)
}
