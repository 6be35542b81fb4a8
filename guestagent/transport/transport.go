// Package transport carries the guest protocol over a byte stream: JSON-RPC
// 2.0 messages one per line (github.com/creachadair/jrpc2 channels), with the
// protocol's 64 MiB line cap enforced in both directions, and the mapping
// between protocol error codes and jrpc2 errors. The host client and the
// guest agent both use it.
package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// ErrLineTooLong is returned by Recv (and Send) for a message over the cap;
// the peer's connection is then closed.
var ErrLineTooLong = fmt.Errorf("message exceeds the protocol limit of %d bytes", protocol.MaxLineBytes)

// Line returns a channel framing one message per '\n'-terminated line, capped
// at protocol.MaxLineBytes.
func Line(r io.Reader, wc io.WriteCloser) channel.Channel {
	return LineWithLimit(r, wc, protocol.MaxLineBytes)
}

// LineWithLimit is Line with another cap (tests use small ones).
func LineWithLimit(r io.Reader, wc io.WriteCloser, max int) channel.Channel {
	return &line{r: bufio.NewReaderSize(r, 64<<10), wc: wc, max: max}
}

type line struct {
	r   *bufio.Reader
	max int
	// wmu serialises writers so that lines never interleave.
	wmu sync.Mutex
	wc  io.WriteCloser
}

func (c *line) Send(msg []byte) error {
	if len(msg) > c.max {
		return ErrLineTooLong
	}
	if bytes.IndexByte(msg, '\n') >= 0 {
		return errors.New("message contains a newline")
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// One write per message: msg and its terminator together.
	buf := make([]byte, len(msg)+1)
	copy(buf, msg)
	buf[len(msg)] = '\n'
	_, err := c.wc.Write(buf)
	return err
}

func (c *line) Recv() ([]byte, error) {
	var acc []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		if len(acc)+len(chunk) > c.max+1 {
			return nil, ErrLineTooLong
		}
		if err == bufio.ErrBufferFull {
			acc = append(acc, chunk...)
			continue
		}
		if acc == nil {
			acc = append([]byte(nil), chunk...)
		} else {
			acc = append(acc, chunk...)
		}
		if err != nil {
			if len(acc) > 0 && errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF // a partial last line
			}
			return nil, err
		}
		return acc[:len(acc)-1], nil
	}
}

func (c *line) Close() error { return c.wc.Close() }

// ToRPC converts a handler error to the jrpc2 error sent on the wire.
func ToRPC(err error) error {
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	var je *jrpc2.Error
	switch {
	case errors.As(err, &je):
		return je
	case errors.As(err, &pe):
		return &jrpc2.Error{Code: jrpc2.Code(pe.Code), Message: pe.Message}
	case errors.Is(err, context.Canceled):
		return &jrpc2.Error{Code: protocol.CodeCancelled, Message: "request cancelled"}
	case errors.Is(err, context.DeadlineExceeded):
		return &jrpc2.Error{Code: protocol.CodeTimeout, Message: err.Error()}
	case errors.Is(err, fs.ErrNotExist):
		return &jrpc2.Error{Code: protocol.CodeNotFound, Message: err.Error()}
	case errors.Is(err, fs.ErrExist):
		return &jrpc2.Error{Code: protocol.CodeConflict, Message: err.Error()}
	case errors.Is(err, fs.ErrPermission):
		return &jrpc2.Error{Code: protocol.CodePermissionDenied, Message: err.Error()}
	}
	return &jrpc2.Error{Code: protocol.CodeInternalError, Message: err.Error()}
}

// FromRPC converts an error from a jrpc2 call into a *protocol.Error when the
// guest answered with one; other errors (transport, context) are returned
// unchanged.
func FromRPC(err error) error {
	var je *jrpc2.Error
	if errors.As(err, &je) {
		return &protocol.Error{Code: int(je.Code), Message: je.Message}
	}
	return err
}

// RequestID returns the JSON id of the inbound request in ctx, as it appears
// on the wire, or nil outside a request.
func RequestID(ctx context.Context) json.RawMessage {
	req := jrpc2.InboundRequest(ctx)
	if req == nil || req.ID() == "" {
		return nil
	}
	return json.RawMessage(req.ID())
}
