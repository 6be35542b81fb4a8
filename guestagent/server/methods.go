package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"errors"
	"image"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/frame"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/settle"
)

func (s *Server) hello(ctx context.Context, p protocol.HelloParams) (protocol.HelloResult, error) {
	if p.ProtocolVersion < protocol.MinVersion {
		return protocol.HelloResult{}, protocol.Errorf(protocol.CodeVersionMismatch,
			"host speaks protocol version %d; this guest agent (%s) needs at least %d", p.ProtocolVersion, s.cfg.AgentVersion, protocol.MinVersion)
	}
	if len(p.Challenge) != protocol.ChallengeBytes {
		return protocol.HelloResult{}, protocol.Errorf(protocol.CodeInvalidParams,
			"hello needs a challenge of %d bytes (protocol %d)", protocol.ChallengeBytes, protocol.Version)
	}
	key, err := s.bootKey(p.EnrollKey)
	if err != nil {
		return protocol.HelloResult{}, err
	}
	desc, err := s.cfg.Driver.Describe(ctx)
	if err != nil {
		return protocol.HelloResult{}, err
	}
	caps := append([]string{protocol.CapShell, protocol.CapFiles, protocol.CapDocuments, protocol.CapReady}, desc.Capabilities...)
	if _, ok := s.cfg.Driver.(AppResolver); ok {
		caps = append(caps, protocol.CapResolveApp)
	}
	if w, ok := s.cfg.Driver.(Warmer); ok {
		// What the desktop starts after the first hello, while the host
		// takes its first look (see Warmer).
		go w.Warm(s.life)
	}
	return protocol.HelloResult{
		ProtocolVersion: protocol.Version,
		AgentVersion:    s.cfg.AgentVersion,
		OS:              desc.OS,
		OSVersion:       desc.OSVersion,
		Screen:          desc.Screen,
		SharedPath:      s.cfg.SharedDir,
		Capabilities:    caps,
		Permissions:     s.permissions(desc.Permissions),
		Proof:           protocol.HelloProof(key, p.Challenge),
	}, nil
}

// bootKey returns the key hello proves: the one the agent was started
// with, or the one the first hello enrolled. A second, different key is
// refused: whoever enrolled first (the host, at boot) holds it.
func (s *Server) bootKey(enroll []byte) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if enroll != nil {
		switch {
		case len(enroll) != protocol.KeyBytes:
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "enrollKey must have %d bytes", protocol.KeyBytes)
		case s.key == nil:
			s.key = bytes.Clone(enroll)
		case !hmac.Equal(s.key, enroll):
			return nil, protocol.Errorf(protocol.CodePermissionDenied, "this guest agent holds a boot key already")
		}
	}
	if s.key == nil {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "this guest agent has no boot key (it takes one from --key-fd, or from the host's first hello)")
	}
	return s.key, nil
}

func (s *Server) health(ctx context.Context) (protocol.HealthResult, error) {
	res := protocol.HealthResult{UptimeSeconds: s.uptime()}
	if fi, err := os.Stat(s.cfg.SharedDir); err == nil && fi.IsDir() {
		res.SharedMounted = true
	} else {
		res.Problems = append(res.Problems, "shared folder "+s.cfg.SharedDir+" is not there")
	}
	desc, err := s.cfg.Driver.Describe(ctx)
	if err != nil {
		res.Problems = append(res.Problems, "display: "+err.Error())
	} else {
		res.Problems = append(res.Problems, desc.Problems...)
	}
	res.Permissions = s.permissions(desc.Permissions)
	if res.SharedMounted && !res.Permissions.SharedFolder {
		res.Problems = append(res.Problems, "the guest agent may not read the shared folder "+s.cfg.SharedDir+": "+sharedGrantHint)
	}
	res.OK = len(res.Problems) == 0
	return res, nil
}

// permissions adds to the driver's the shared folder's: whether the agent
// can list it (macOS asks before a process reads a volume, and its answer
// may change while the agent runs).
func (s *Server) permissions(p protocol.Permissions) protocol.Permissions {
	p.SharedFolder = s.canReadShared() == nil
	return p
}

// canReadShared lists one entry of the shared folder.
func (s *Server) canReadShared() error {
	f, err := s.shared()
	if err != nil {
		return err
	}
	dir, err := f.root.Open(".")
	if err != nil {
		return err
	}
	defer dir.Close()
	if _, err := dir.Readdirnames(1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// shutdown powers the guest off shortly after the answer has gone out.
func (s *Server) shutdown() {
	s.shutdownOnce.Do(func() {
		time.AfterFunc(100*time.Millisecond, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := s.cfg.Driver.PowerOff(ctx); err != nil {
				s.cfg.Log.Error("power off", "err", err)
			}
			if s.cfg.OnShutdown != nil {
				s.cfg.OnShutdown()
			}
		})
	})
}

func (s *Server) screenshot(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	switch p.Format {
	case "", protocol.FormatPNG, protocol.FormatJPEG:
	default:
		return protocol.ScreenshotResult{}, protocol.Errorf(protocol.CodeInvalidParams, "format %q: use png or jpeg", p.Format)
	}
	if p.MaxWidth < 0 || p.MaxHeight < 0 || p.MaxWidth > 16384 || p.MaxHeight > 16384 {
		return protocol.ScreenshotResult{}, protocol.Errorf(protocol.CodeInvalidParams, "maxWidth and maxHeight must be between 0 and 16384")
	}
	if p.Quality < 0 || p.Quality > 100 {
		return protocol.ScreenshotResult{}, protocol.Errorf(protocol.CodeInvalidParams, "quality must be between 1 and 100")
	}
	if sp, ok := s.cfg.Driver.(Speculator); ok && sp.Settler().Pending() {
		return s.speculate(ctx, sp, p)
	}
	return s.shoot(ctx, s.cfg.Driver.Capture, p)
}

// shoot captures with capture, encodes and releases the frame.
func (s *Server) shoot(ctx context.Context, capture func(context.Context) (image.Image, error), p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	img, err := capture(ctx)
	if err != nil {
		return protocol.ScreenshotResult{}, err
	}
	if f, ok := img.(*frame.Frame); ok && f.Release != nil {
		defer f.Release()
	}
	return s.encodeScreenshot(img, p)
}

// speculate is a screenshot after input from a Speculator: one captured
// and encoded while the settle wait goes on, if the screen did not change
// after it was captured, else one captured after the wait.
func (s *Server) speculate(ctx context.Context, sp Speculator, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	st := sp.Settler()
	early, stop := context.WithCancel(ctx)
	type guess struct {
		res  protocol.ScreenshotResult
		mark settle.Mark
		ok   bool
	}
	guessed := make(chan guess, 1)
	go func() {
		var g guess
		defer func() { guessed <- g }()
		if !st.Quiet(early, st.QuietTime()/2) {
			return
		}
		m, live := st.Mark()
		if !live {
			return
		}
		res, err := s.shoot(early, sp.CaptureNow, p)
		g = guess{res: res, mark: m, ok: err == nil}
	}()
	st.Wait(ctx)
	stop()
	if g := <-guessed; g.ok && !st.Changed(g.mark) {
		return g.res, nil
	}
	if err := ctx.Err(); err != nil {
		return protocol.ScreenshotResult{}, err
	}
	return s.shoot(ctx, sp.CaptureNow, p)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return protocol.Errorf(protocol.CodeInvalidParams, "url %q is not an absolute URL", raw)
	}
	switch u.Scheme {
	case "http", "https", "mailto", "ftp":
		return nil
	}
	return protocol.Errorf(protocol.CodeInvalidParams, "url scheme %q is not allowed (use http, https, mailto or ftp; open files with open_file)", u.Scheme)
}
