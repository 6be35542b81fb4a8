package guest

import (
	"encoding/json"
	"net"
	"sync/atomic"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Bounds on what the host decodes from a guest, beyond the protocol's line
// cap (protocol.MaxLineBytes, enforced by the transport before anything is
// parsed).
const (
	// maxResultDepth bounds the nesting of a result: an accessibility tree
	// of the guests' 64 levels nests some 130 deep.
	maxResultDepth = 160
	// maxTreeNodes bounds the nodes of an accessibility tree (the guests
	// stop at 5000).
	maxTreeNodes = 10000
	// maxHelloString bounds each string of a hello answer.
	maxHelloString = 256
	// maxCapabilities bounds the capabilities a guest announces.
	maxCapabilities = 32
	// writeTimeout bounds one write to the guest: a guest that stops
	// reading cannot hold a call (or the cancel notice) past it.
	writeTimeout = 10 * time.Second
)

// checkResult refuses a result too deep to decode safely, and an
// accessibility tree with too many nodes, before anyone unmarshals it.
func checkResult(method string, raw json.RawMessage) error {
	if d := jsonDepth(raw, maxResultDepth); d > maxResultDepth {
		return errdefs.Invalidf("%s: the guest's result nests deeper than %d levels", method, maxResultDepth)
	}
	if method == protocol.MethodResolveApp {
		return checkResolved(raw)
	}
	if method != protocol.MethodAccessibilityTree {
		return nil
	}
	var tree protocol.AccessibilityResult
	if err := json.Unmarshal(raw, &tree); err != nil {
		return errdefs.Invalidf("%s: malformed result from the guest: %v", method, err)
	}
	// Count the nodes with a stack of slices, not recursion.
	n := 0
	stack := [][]protocol.Node{tree.Nodes}
	for len(stack) > 0 {
		ns := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n += len(ns)
		if n > maxTreeNodes {
			return errdefs.Invalidf("%s: the guest's tree has more than %d nodes", method, maxTreeNodes)
		}
		for i := range ns {
			if len(ns[i].Children) > 0 {
				stack = append(stack, ns[i].Children)
			}
		}
	}
	return nil
}

// jsonDepth returns the deepest nesting of objects and arrays in b, or
// max+1 as soon as it exceeds max. It only counts brackets outside
// strings (it does not validate; the decoder that follows does), in one
// pass and constant space.
func jsonDepth(b []byte, max int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > deepest {
				if deepest = depth; deepest > max {
					return deepest
				}
			}
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// guestConn gives every write to the guest a deadline, and counts the
// bytes read (a hello that failed after bytes came is a broken protocol,
// not a guest still booting).
type guestConn struct {
	net.Conn
	read atomic.Int64
}

func (c *guestConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.Conn.Write(p)
}

func (c *guestConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}
