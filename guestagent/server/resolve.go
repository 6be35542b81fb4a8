package server

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// AppResolver is a Driver that can say what OpenApp and OpenFile would
// start, without starting it. The server announces protocol.CapResolveApp
// for a driver that is one, and answers resolve_app with it; the host
// judges the answer (the guest decides nothing with it).
type AppResolver interface {
	// ResolveApp says what OpenApp(name) would start when path is empty,
	// and what OpenFile(path, name) would otherwise: with name empty,
	// the file's default application. It must take the same road as
	// those calls do. A name that would open nothing is Found false, not
	// an error. path is absolute and exists.
	ResolveApp(ctx context.Context, name, path string) (protocol.ResolvedApp, error)
}

// sharedFile maps open_file's path to an absolute path in the shared
// folder that exists (through the root: no escape by a link or ..).
func (s *Server) sharedFile(p string) (string, error) {
	f, err := s.shared()
	if err != nil {
		return "", err
	}
	rel, err := f.rel(p)
	if err != nil {
		return "", err
	}
	if _, err := f.root.Stat(rel); err != nil {
		return "", fsError(p, err)
	}
	return filepath.Join(s.cfg.SharedDir, rel), nil
}

// resolveApp answers resolve_app: the driver's resolution, with the facts
// of open_file's file, cut to the protocol's bounds.
func (s *Server) resolveApp(ctx context.Context, r AppResolver, p protocol.ResolveAppParams) (protocol.ResolvedApp, error) {
	if p.Path == "" {
		if p.App == "" {
			return protocol.ResolvedApp{}, protocol.Errorf(protocol.CodeInvalidParams, "app or path is required")
		}
		res, err := r.ResolveApp(ctx, p.App, "")
		return boundResolved(res), err
	}
	abs, err := s.sharedFile(p.Path)
	if err != nil {
		return protocol.ResolvedApp{}, err
	}
	facts, err := withShared(s, func(f *files) (protocol.FileFacts, error) { return f.facts(p.Path) })
	if err != nil {
		return protocol.ResolvedApp{}, err
	}
	res, err := r.ResolveApp(ctx, p.App, abs)
	if err != nil {
		return protocol.ResolvedApp{}, err
	}
	res.Target = &facts
	return boundResolved(res), nil
}

// facts says what makes a file of the share a program: its executable
// bits and its #! line. A file that is not a regular one (a FIFO put in
// its place) is not read: opening it does not wait for a writer.
func (f *files) facts(p string) (protocol.FileFacts, error) {
	rel, err := f.rel(p)
	if err != nil {
		return protocol.FileFacts{}, err
	}
	file, err := f.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return protocol.FileFacts{}, fsError(p, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return protocol.FileFacts{}, fsError(p, err)
	}
	facts := protocol.FileFacts{Dir: fi.IsDir(), Executable: !fi.IsDir() && fi.Mode()&0o111 != 0}
	if !fi.Mode().IsRegular() {
		return facts, nil
	}
	head := make([]byte, protocol.MaxShebang)
	n, err := io.ReadFull(file, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return protocol.FileFacts{}, fsError(p, err)
	}
	head = head[:n]
	if bytes.HasPrefix(head, []byte("#!")) {
		line, _, _ := bytes.Cut(head, []byte("\n"))
		facts.Shebang = printable(strings.TrimRight(string(line), "\r"))
	}
	return facts, nil
}

// boundResolved cuts an answer to the protocol's bounds, and makes its
// strings printable UTF-8, so that an honest guest's answer is never one
// the host refuses.
func boundResolved(r protocol.ResolvedApp) protocol.ResolvedApp {
	cut := func(s string, n int) string {
		s = printable(s)
		if len(s) <= n {
			return s
		}
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n]
	}
	list := func(l []string) []string {
		if len(l) > protocol.MaxResolvedList {
			l = l[:protocol.MaxResolvedList]
		}
		out := make([]string, 0, len(l))
		for _, s := range l {
			out = append(out, cut(s, protocol.MaxResolvedString))
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	for _, s := range []*string{&r.Kind, &r.ID, &r.Name, &r.File, &r.Executable, &r.MIME} {
		*s = cut(*s, protocol.MaxResolvedString)
	}
	r.Args, r.Categories = list(r.Args), list(r.Categories)
	if r.Target != nil {
		t := *r.Target
		t.Shebang = cut(t.Shebang, protocol.MaxShebang)
		r.Target = &t
	}
	return r
}

// printable replaces invalid UTF-8, control and format characters (the
// bidi overrides among them) with U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
