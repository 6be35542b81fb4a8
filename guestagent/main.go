// Command hivecrew-guestagent runs inside every Hivecrew guest: it serves the
// guest protocol (screenshots, input, accessibility, apps, files, shell,
// clipboard) to the host over a unix socket or vsock.
//
//	hivecrew-guestagent --listen unix:/run/hivecrew/agent.sock --shared /shared --key-fd 9
//	hivecrew-guestagent --listen vsock:7420 --shared "/Volumes/My Shared Files/hivecrew"
//
// The agent proves a per-boot key at every hello (PROTOCOL.md). On Linux
// the host hands it the key on an inherited descriptor (--key-fd), which
// the agent reads and closes before anything else runs; the agent also
// makes itself non-dumpable, so that other guest processes of its uid
// cannot ptrace it or read its memory. On macOS the host enrolls the key
// in the first hello of the boot.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hivecrew/hivecrew/core/version"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

// options are the agent's flags.
type options struct {
	listen   string
	shared   string
	logLevel string
	display  string
	powerOff bool
	// keyFD is the descriptor the boot key is read from; -1 for none.
	keyFD int
	// session starts a desktop (Linux sandboxes): WIDTHxHEIGHT, empty for none.
	session string
}

func main() {
	// The child that reads one document for read_document (macOS).
	if code, ok := extractDocument(os.Args[1:]); ok {
		os.Exit(code)
	}
	var o options
	fs := flag.NewFlagSet("hivecrew-guestagent", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "", "where to listen: unix:/path/agent.sock or vsock:PORT")
	fs.StringVar(&o.shared, "shared", "", "the shared folder (inbox/, outbox/, workspace/)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.display, "display", "", "X display (Linux; default $DISPLAY)")
	fs.StringVar(&o.session, "session", "", "start a desktop session of this size first, e.g. 1280x800 (Linux sandboxes)")
	fs.BoolVar(&o.powerOff, "poweroff", false, "make the shutdown method power the guest OS off (set in VM templates); without it the agent just exits")
	fs.IntVar(&o.keyFD, "key-fd", -1, "read the per-boot key from this inherited descriptor (then closed)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println("hivecrew-guestagent", version.Version)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hivecrew-guestagent:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, logOut io.Writer) error {
	// First, before any other process starts: no one else reads the key.
	if err := harden(); err != nil {
		return err
	}
	var key []byte
	if o.keyFD >= 0 {
		var err error
		if key, err = readKey(o.keyFD); err != nil {
			return err
		}
	}
	// Whatever else was inherited (the sandbox's setup descriptors) is not
	// passed on to the programs the agent starts for the model.
	if err := sealInherited(); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	if o.shared == "" {
		return errors.New("--shared is required")
	}
	shared, err := filepath.Abs(o.shared)
	if err != nil {
		return err
	}
	// The driver (and, in a sandbox, the desktop session) comes first: a
	// listening socket tells the host the guest is ready.
	driver, closeDriver, err := newDriver(ctx, o, log)
	if err != nil {
		return err
	}
	defer closeDriver()
	ln, err := listen(o.listen)
	if err != nil {
		return err
	}
	defer ln.Close()

	docs, closeDocs, err := newDocuments()
	if err != nil {
		return err
	}
	defer closeDocs()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := server.New(server.Config{
		SharedDir: shared, Driver: driver, Log: log, AgentVersion: version.Version,
		OnShutdown: cancel, Key: key, Documents: docs,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	log.Info("guest agent listening", "listen", o.listen, "shared", shared, "version", version.Version)
	return runPlatform(func() error { return srv.Serve(ctx, ln) })
}

// listen parses unix:/path or vsock:PORT and listens there.
func listen(spec string) (net.Listener, error) {
	kind, addr, ok := strings.Cut(spec, ":")
	if !ok || addr == "" {
		return nil, fmt.Errorf("--listen %q: want unix:/path/agent.sock or vsock:PORT", spec)
	}
	switch kind {
	case "unix":
		if err := os.Remove(addr); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %s: %w", addr, err)
		}
		ln, err := net.Listen("unix", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		if err := os.Chmod(addr, 0o600); err != nil {
			ln.Close()
			return nil, err
		}
		return ln, nil
	case "vsock":
		port, err := strconv.ParseUint(addr, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--listen %q: bad vsock port", spec)
		}
		return listenVsock(uint32(port))
	}
	return nil, fmt.Errorf("--listen %q: want unix:/path/agent.sock or vsock:PORT", spec)
}

// sealInherited marks every descriptor above stderr close-on-exec: the
// apps and shell commands the agent starts get only stdin, stdout and
// stderr from it. (Go opens its own files close-on-exec; this is for what
// the agent's parent left open.)
func sealInherited() error {
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return fmt.Errorf("list the inherited descriptors: %w", err)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd) // the listing's own descriptor is gone by now: EBADF, ignored
		}
	}
	return nil
}

// readKey reads the boot key from the inherited descriptor fd, which it
// closes: the key is protocol.KeyBytes long, and the writer has closed its
// end (a pipe), so that nothing is left to read for anyone else.
func readKey(fd int) ([]byte, error) {
	f := os.NewFile(uintptr(fd), "boot-key")
	if f == nil {
		return nil, fmt.Errorf("--key-fd %d: not a descriptor", fd)
	}
	defer f.Close()
	key, err := io.ReadAll(io.LimitReader(f, protocol.KeyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--key-fd %d: %w", fd, err)
	}
	if len(key) != protocol.KeyBytes {
		return nil, fmt.Errorf("--key-fd %d: the boot key has %d bytes, want %d", fd, len(key), protocol.KeyBytes)
	}
	return key, nil
}
