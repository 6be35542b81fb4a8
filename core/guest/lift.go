package guest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"sync"
	"time"

	"github.com/creachadair/jrpc2/channel"
)

// liftMin is the size of a screenshot's base64 data from which it is lifted
// out of the response before jrpc2 reads it.
const liftMin = 16 << 10

// liftChannel passes a guest's messages to jrpc2, but takes the base64
// image out of screenshot responses first and decodes it itself. jrpc2
// reads a response with encoding/json about five times over (the batch,
// the message, the result), at some 60 MB/s: a text-heavy screen's
// 300 KB PNG took 8 ms to receive, more than capturing and encoding it.
// The wire protocol is unchanged; the image comes back through take.
type liftChannel struct {
	channel.Channel

	// mu guards images and unsettled.
	mu sync.Mutex
	// images holds decoded images by response id until the call that
	// asked for them takes them; held is their bytes.
	images map[string][]byte
	held   int
	// unsettled are the responses passed to jrpc2 that no call has taken
	// yet (see settleWait), closed is closed when it empties.
	unsettled map[string]bool
	settledCh chan struct{}
}

// settleWait bounds how long the end of a connection waits for calls to
// take the answers read just before it.
const settleWait = 200 * time.Millisecond

// maxLifted and maxLiftedBytes bound the images waiting for their calls (a
// call that gave up leaves its image behind, and a hostile guest may send
// screenshots no call asked for).
const (
	maxLifted      = 8
	maxLiftedBytes = maxScreenshotBytes
)

// Recv passes the next message on. When the connection ends, it waits
// (at most settleWait) for the calls to take the answers read before the
// end: jrpc2 hands a response to its call on a goroutine of its own and
// fails every pending call as soon as Recv reports the end, so a guest that
// answers and then closes the connection would otherwise lose its answer
// now and then.
func (c *liftChannel) Recv() ([]byte, error) {
	msg, err := c.Channel.Recv()
	if err != nil {
		c.waitSettled(settleWait)
		return msg, err
	}
	c.noteResponse(msg)
	if len(msg) < liftMin {
		return msg, nil
	}
	id, out, img, ok := liftImage(msg, liftMin)
	if !ok {
		return msg, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.images == nil {
		c.images = map[string][]byte{}
	}
	if len(c.images) >= maxLifted || c.held+len(img) > maxLiftedBytes {
		clear(c.images) // calls long gone; theirs would be the only ones
		c.held = 0
	}
	c.images[id] = img
	c.held += len(img)
	if c.unsettled == nil {
		c.unsettled = map[string]bool{}
	}
	c.unsettled[id] = true
	return out, nil
}

// take returns and forgets the image lifted from the response with id.
func (c *liftChannel) take(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, ok := c.images[id]
	delete(c.images, id)
	c.held -= len(img)
	return img, ok
}

// liftImage reads msg as a JSON-RPC response whose result is a screenshot
// ({format, width, height, data} and nothing else) with a base64 data string
// of least bytes or more. It returns the response's id as written, msg
// with the data string emptied, and the decoded image. Anything else, or
// anything malformed, is not ok and is left to jrpc2 as it is. The scan
// walks the message's structure (strings, objects, arrays), so a "data"
// inside another string or value is never taken for the result's.
func liftImage(msg []byte, least int) (id string, out, img []byte, ok bool) {
	s := scanner{b: msg}
	var dataStart, dataEnd int // the data string's contents
	seen := map[string]bool{}
	ok = s.object(func(key string) bool {
		if seen[key] {
			return false // duplicate keys: let encoding/json decide
		}
		seen[key] = true
		switch key {
		case "id":
			start := s.i
			if !s.value() {
				return false
			}
			id = string(msg[start:s.i])
			return true
		case "result":
			fields := map[string]bool{}
			return s.object(func(key string) bool {
				if fields[key] {
					return false
				}
				fields[key] = true
				switch key {
				case "format", "width", "height":
					return s.value()
				case "data":
					if s.i >= len(msg) || msg[s.i] != '"' {
						return false
					}
					dataStart = s.i + 1
					if !s.value() {
						return false
					}
					dataEnd = s.i - 1
					return true
				}
				return false
			})
		}
		return s.value()
	})
	if !ok || id == "" || dataEnd-dataStart < least {
		return "", nil, nil, false
	}
	data := msg[dataStart:dataEnd]
	if bytes.IndexByte(data, '\\') >= 0 {
		return "", nil, nil, false
	}
	img = make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(img, data)
	if err != nil {
		return "", nil, nil, false
	}
	out = make([]byte, 0, len(msg)-len(data))
	out = append(append(out, msg[:dataStart]...), msg[dataEnd:]...)
	return id, out, img[:n], true
}

// scanner walks JSON just enough to find the values it is asked about; it
// does not check numbers or literals (jrpc2 still reads what is passed on).
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// object reads an object at s.i, calling field for each key with s.i at
// its value, which field must read.
func (s *scanner) object(field func(key string) bool) bool {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.space()
		start := s.i
		if !s.str() {
			return false
		}
		key := s.b[start+1 : s.i-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // an escaped key could spell any name
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		if !field(string(key)) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// maxScanDepth bounds the nesting the scanner walks through. A deeper
// message is not lifted: it goes to jrpc2 as it is, whose encoding/json
// refuses it at its own depth limit. The scanner keeps its own stack of
// open brackets (no recursion), so no message can exhaust the goroutine's
// stack, whatever its depth.
const maxScanDepth = 64

// value skips the value at s.i, iteratively.
func (s *scanner) value() bool {
	var open [maxScanDepth]byte // the closing bracket each open container needs
	depth := 0
	for {
		// A value starts at s.i.
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch c := s.b[s.i]; c {
		case '"':
			if !s.str() {
				return false
			}
		case '{', '[':
			if depth == maxScanDepth {
				return false
			}
			closing := byte(']')
			if c == '{' {
				closing = '}'
			}
			s.i++
			s.space()
			if s.i < len(s.b) && s.b[s.i] == closing {
				s.i++ // empty: a complete value
				break
			}
			open[depth] = closing
			depth++
			if c == '{' && !s.key() {
				return false
			}
			continue // the container's first value
		default:
			start := s.i
			for s.i < len(s.b) && bytes.IndexByte([]byte(",}] \t\r\n"), s.b[s.i]) < 0 {
				s.i++
			}
			if s.i == start {
				return false
			}
		}
		// A value ended: close the containers it ends, or go on to the
		// next element of the innermost one.
		for next := false; !next; {
			if depth == 0 {
				return true
			}
			s.space()
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case ',':
				s.i++
				if open[depth-1] == '}' && !s.key() {
					return false
				}
				next = true
			case open[depth-1]:
				s.i++
				depth--
			default:
				return false
			}
		}
	}
}

// key reads an object's key and its colon, leaving s.i at the value.
func (s *scanner) key() bool {
	s.space()
	if !s.str() {
		return false
	}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return false
	}
	s.i++
	return true
}

// str skips the string at s.i, quotes included.
func (s *scanner) str() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for j := s.i + 1; ; {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return false
		}
		j += k
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for p := j - 1; p > s.i && s.b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			s.i = j + 1
			return true
		}
		j++
	}
}

// noteResponse notes a response's id as unsettled until settled is called
// with it.
func (c *liftChannel) noteResponse(msg []byte) {
	var r struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if len(msg) > liftMin {
		msg = msg[:0] // a screenshot: lifted below, its id taken there
	}
	if json.Unmarshal(msg, &r) != nil || len(r.ID) == 0 || (r.Result == nil && r.Error == nil) {
		return
	}
	c.unsettle(string(r.ID))
}

func (c *liftChannel) unsettle(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unsettled == nil {
		c.unsettled = map[string]bool{}
	}
	if len(c.unsettled) >= maxLifted*8 {
		clear(c.unsettled) // calls long gone
	}
	c.unsettled[id] = true
}

// settled says a call has taken the response with id.
func (c *liftChannel) settled(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.unsettled, id)
	if len(c.unsettled) == 0 && c.settledCh != nil {
		close(c.settledCh)
		c.settledCh = nil
	}
}

// waitSettled waits until every response passed on was taken, or d.
func (c *liftChannel) waitSettled(d time.Duration) {
	c.mu.Lock()
	if len(c.unsettled) == 0 {
		c.mu.Unlock()
		return
	}
	if c.settledCh == nil {
		c.settledCh = make(chan struct{})
	}
	ch := c.settledCh
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}
