package macsetup

import (
	"bufio"
	"context"
	"crypto/des"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"math/bits"
	"net"
	"sync"
	"time"
)

// Bounds of what the console server may send.
const (
	maxScreenSide = 8192
	maxNameBytes  = 4096
	maxCutText    = 1 << 20
	maxReasonLen  = 4096
	// rfbIOTimeout bounds one read or write when ctx has no deadline.
	rfbIOTimeout = 30 * time.Second
)

// Client is an RFB client on one connection: Frame reads the screen,
// Key and Pointer send input. Frame, Key and Pointer may be called from
// several goroutines.
type Client struct {
	conn net.Conn

	// readMu guards r, fb and pf (the reads: Frame).
	readMu sync.Mutex
	r      *bufio.Reader
	fb     *image.RGBA
	pf     pixelFormat

	// writeMu guards writes to conn.
	writeMu sync.Mutex
}

// pixelFormat is RFB's PIXEL_FORMAT.
type pixelFormat struct {
	bpp, depth                      uint8
	bigEndian, trueColour           bool
	redMax, greenMax, blueMax       uint16
	redShift, greenShift, blueShift uint8
}

// Dial connects to the console at addr with password (VNC authentication;
// "" for none) and reads the server's screen size.
func Dial(ctx context.Context, addr, password string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to the VM's console: %w", err)
	}
	c, err := NewClient(ctx, conn, password)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// NewClient runs the RFB handshake on conn.
func NewClient(ctx context.Context, conn net.Conn, password string) (*Client, error) {
	c := &Client{conn: conn, r: bufio.NewReader(conn)}
	stop := c.deadline(ctx)
	defer stop()
	if err := c.handshake(password); err != nil {
		return nil, fmt.Errorf("the VM's console: %w", err)
	}
	return c, nil
}

// deadline applies ctx's deadline (or rfbIOTimeout) to the connection and
// unblocks it when ctx ends; stop undoes that.
func (c *Client) deadline(ctx context.Context) (stop func()) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(rfbIOTimeout)
	}
	c.conn.SetDeadline(dl)
	done := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Now()) })
	return func() { done() }
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Size is the screen's size in pixels.
func (c *Client) Size() (w, h int) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	b := c.fb.Bounds()
	return b.Dx(), b.Dy()
}

func (c *Client) handshake(password string) error {
	var version [12]byte
	if _, err := io.ReadFull(c.r, version[:]); err != nil {
		return fmt.Errorf("read the protocol version: %w", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(version[:]), "RFB %03d.%03d\n", &major, &minor); err != nil || major != 3 {
		return fmt.Errorf("not an RFB 3.x server (%q)", version[:])
	}
	v38 := minor >= 8
	reply := "RFB 003.008\n"
	if !v38 {
		reply = "RFB 003.003\n"
	}
	if err := c.write([]byte(reply)); err != nil {
		return err
	}
	var kind uint32
	if v38 {
		n, err := c.r.ReadByte()
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("the server refused the connection: %s", c.reason())
		}
		types := make([]byte, n)
		if _, err := io.ReadFull(c.r, types); err != nil {
			return err
		}
		for _, t := range types {
			if t == 2 || (t == 1 && kind != 2) {
				kind = uint32(t)
			}
		}
		if kind == 0 {
			return fmt.Errorf("no security type this client speaks (offered %v)", types)
		}
		if err := c.write([]byte{byte(kind)}); err != nil {
			return err
		}
	} else if err := binary.Read(c.r, binary.BigEndian, &kind); err != nil {
		return err
	}
	switch kind {
	case 1:
	case 2:
		var challenge [16]byte
		if _, err := io.ReadFull(c.r, challenge[:]); err != nil {
			return err
		}
		if err := c.write(vncResponse(challenge, password)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("security type %d is not one this client speaks", kind)
	}
	if kind == 2 || v38 {
		var result uint32
		if err := binary.Read(c.r, binary.BigEndian, &result); err != nil {
			return err
		}
		if result != 0 {
			why := "authentication failed"
			if v38 {
				why += ": " + c.reason()
			}
			return errors.New(why)
		}
	}
	if err := c.write([]byte{1}); err != nil { // ClientInit: shared
		return err
	}
	var init struct {
		W, H uint16
		PF   [16]byte
		Name uint32
	}
	if err := binary.Read(c.r, binary.BigEndian, &init); err != nil {
		return fmt.Errorf("read the server's init: %w", err)
	}
	if init.W == 0 || init.H == 0 || init.W > maxScreenSide || init.H > maxScreenSide || init.Name > maxNameBytes {
		return fmt.Errorf("the server's init is out of bounds (%dx%d, name of %d bytes)", init.W, init.H, init.Name)
	}
	if _, err := io.CopyN(io.Discard, c.r, int64(init.Name)); err != nil {
		return err
	}
	pf, err := parsePixelFormat(init.PF)
	if err != nil {
		return err
	}
	c.pf, c.fb = pf, image.NewRGBA(image.Rect(0, 0, int(init.W), int(init.H)))
	return nil
}

// reason reads a length-prefixed reason string.
func (c *Client) reason() string {
	var n uint32
	if binary.Read(c.r, binary.BigEndian, &n) != nil {
		return "(no reason)"
	}
	b := make([]byte, min(n, maxReasonLen))
	io.ReadFull(c.r, b)
	return string(b)
}

// vncResponse is VNC authentication's answer: the challenge encrypted
// with DES, keyed by the password's first 8 bytes with each byte's bits
// reversed (RFB's convention).
func vncResponse(challenge [16]byte, password string) []byte {
	var key [8]byte
	copy(key[:], password)
	for i := range key {
		key[i] = bits.Reverse8(key[i])
	}
	block, _ := des.NewCipher(key[:]) // an 8-byte key never fails
	out := make([]byte, 16)
	block.Encrypt(out[:8], challenge[:8])
	block.Encrypt(out[8:], challenge[8:])
	return out
}

func parsePixelFormat(b [16]byte) (pixelFormat, error) {
	pf := pixelFormat{bpp: b[0], depth: b[1], bigEndian: b[2] != 0, trueColour: b[3] != 0,
		redMax: binary.BigEndian.Uint16(b[4:]), greenMax: binary.BigEndian.Uint16(b[6:]), blueMax: binary.BigEndian.Uint16(b[8:]),
		redShift: b[10], greenShift: b[11], blueShift: b[12]}
	if (pf.bpp != 32 && pf.bpp != 16 && pf.bpp != 8) || !pf.trueColour || pf.redMax == 0 || pf.greenMax == 0 || pf.blueMax == 0 {
		return pf, fmt.Errorf("pixel format %+v is not true colour of 8, 16 or 32 bits", pf)
	}
	return pf, nil
}

func (c *Client) write(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.conn.Write(b)
	return err
}

// Key presses (down) or releases an X keysym.
func (c *Client) Key(ctx context.Context, keysym uint32, down bool) error {
	msg := []byte{4, 0, 0, 0, 0, 0, 0, 0}
	if down {
		msg[1] = 1
	}
	binary.BigEndian.PutUint32(msg[4:], keysym)
	return c.send(ctx, msg)
}

// Pointer moves the pointer to x, y (pixels) with buttons held (bit 0
// the left button).
func (c *Client) Pointer(ctx context.Context, x, y int, buttons uint8) error {
	msg := []byte{5, buttons, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(msg[2:], uint16(max(x, 0)))
	binary.BigEndian.PutUint16(msg[4:], uint16(max(y, 0)))
	return c.send(ctx, msg)
}

func (c *Client) send(ctx context.Context, msg []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(rfbIOTimeout)
	}
	c.conn.SetWriteDeadline(dl)
	_, err := c.conn.Write(msg)
	return err
}

// Frame asks for the whole screen and returns it once the server has sent
// an update (a copy of the client's framebuffer).
func (c *Client) Frame(ctx context.Context) (*image.RGBA, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	w, h := c.fb.Bounds().Dx(), c.fb.Bounds().Dy()
	req := []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(req[6:], uint16(w))
	binary.BigEndian.PutUint16(req[8:], uint16(h))
	if err := c.send(ctx, req); err != nil {
		return nil, fmt.Errorf("ask for the screen: %w", err)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(rfbIOTimeout)
	}
	c.conn.SetReadDeadline(dl)
	stop := context.AfterFunc(ctx, func() { c.conn.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		kind, err := c.r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("read the screen: %w", err)
		}
		switch kind {
		case 0:
			if err := c.update(); err != nil {
				return nil, err
			}
			out := image.NewRGBA(c.fb.Bounds())
			copy(out.Pix, c.fb.Pix)
			return out, nil
		case 1: // SetColourMapEntries: not used with true colour
			var m struct {
				Pad      byte
				First, N uint16
			}
			if err := binary.Read(c.r, binary.BigEndian, &m); err != nil {
				return nil, err
			}
			if _, err := io.CopyN(io.Discard, c.r, int64(m.N)*6); err != nil {
				return nil, err
			}
		case 2: // Bell
		case 3: // ServerCutText
			var m struct {
				Pad [3]byte
				N   uint32
			}
			if err := binary.Read(c.r, binary.BigEndian, &m); err != nil {
				return nil, err
			}
			if m.N > maxCutText {
				return nil, fmt.Errorf("the server sent %d bytes of clipboard", m.N)
			}
			if _, err := io.CopyN(io.Discard, c.r, int64(m.N)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("the server sent message type %d, which this client does not know", kind)
		}
	}
}

// update reads a FramebufferUpdate's rectangles into the framebuffer.
func (c *Client) update() error {
	var hdr struct {
		Pad byte
		N   uint16
	}
	if err := binary.Read(c.r, binary.BigEndian, &hdr); err != nil {
		return err
	}
	for range hdr.N {
		var rect struct {
			X, Y, W, H uint16
			Enc        int32
		}
		if err := binary.Read(c.r, binary.BigEndian, &rect); err != nil {
			return err
		}
		switch rect.Enc {
		case -223: // DesktopSize
			if rect.W == 0 || rect.H == 0 || rect.W > maxScreenSide || rect.H > maxScreenSide {
				return fmt.Errorf("new screen size %dx%d is out of bounds", rect.W, rect.H)
			}
			c.fb = image.NewRGBA(image.Rect(0, 0, int(rect.W), int(rect.H)))
			continue
		case 0:
		default:
			return fmt.Errorf("rectangle encoding %d, which this client did not ask for", rect.Enc)
		}
		r := image.Rect(int(rect.X), int(rect.Y), int(rect.X)+int(rect.W), int(rect.Y)+int(rect.H))
		if !r.In(c.fb.Bounds()) {
			return fmt.Errorf("rectangle %v is outside the %v screen", r, c.fb.Bounds())
		}
		if err := c.raw(r); err != nil {
			return err
		}
	}
	return nil
}

// raw reads a raw rectangle's pixels, row by row.
func (c *Client) raw(r image.Rectangle) error {
	bpp := int(c.pf.bpp / 8)
	row := make([]byte, r.Dx()*bpp)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		if _, err := io.ReadFull(c.r, row); err != nil {
			return err
		}
		o := c.fb.PixOffset(r.Min.X, y)
		for x := range r.Dx() {
			v := c.pixel(row[x*bpp : x*bpp+bpp])
			c.fb.Pix[o+4*x] = scale(v>>c.pf.redShift, c.pf.redMax)
			c.fb.Pix[o+4*x+1] = scale(v>>c.pf.greenShift, c.pf.greenMax)
			c.fb.Pix[o+4*x+2] = scale(v>>c.pf.blueShift, c.pf.blueMax)
			c.fb.Pix[o+4*x+3] = 0xff
		}
	}
	return nil
}

func (c *Client) pixel(b []byte) uint32 {
	switch len(b) {
	case 4:
		if c.pf.bigEndian {
			return binary.BigEndian.Uint32(b)
		}
		return binary.LittleEndian.Uint32(b)
	case 2:
		if c.pf.bigEndian {
			return uint32(binary.BigEndian.Uint16(b))
		}
		return uint32(binary.LittleEndian.Uint16(b))
	}
	return uint32(b[0])
}

// scale maps a channel value of 0..max to 0..255.
func scale(v uint32, max uint16) uint8 {
	return uint8((v & uint32(max)) * 255 / uint32(max))
}
