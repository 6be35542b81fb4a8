package macsetup

import (
	"bytes"
	"context"
	"crypto/des"
	"encoding/binary"
	"image/color"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// rfbServer is a console server for the tests: RFB 3.8 with VNC
// authentication, a 4x2 screen of 32-bit little-endian pixels (red in bits
// 16-23, as the BGRA of a Mac's framebuffer), and a script for what it
// does after the handshake.
type rfbServer struct {
	password string
	// after runs once the client is in; conn is the server's side.
	after func(t *testing.T, conn net.Conn)
}

func (s rfbServer) serve(t *testing.T, conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "RFB 003.008\n")
	version := make([]byte, 12)
	if _, err := io.ReadFull(conn, version); err != nil || string(version) != "RFB 003.008\n" {
		t.Errorf("client version %q %v", version, err)
		return
	}
	conn.Write([]byte{1, 2}) // one type: VNC authentication
	chosen := make([]byte, 1)
	io.ReadFull(conn, chosen)
	challenge := []byte("0123456789abcdef")
	conn.Write(challenge)
	answer := make([]byte, 16)
	io.ReadFull(conn, answer)
	// The key's bits reversed, byte by byte, written out the long way.
	key := make([]byte, 8)
	copy(key, s.password)
	for i, b := range key {
		var r byte
		for bit := range 8 {
			if b&(1<<bit) != 0 {
				r |= 0x80 >> bit
			}
		}
		key[i] = r
	}
	block, _ := des.NewCipher(key)
	want := make([]byte, 16)
	block.Encrypt(want[:8], challenge[:8])
	block.Encrypt(want[8:], challenge[8:])
	if !bytes.Equal(answer, want) {
		binary.Write(conn, binary.BigEndian, uint32(1))
		binary.Write(conn, binary.BigEndian, uint32(len("wrong password")))
		io.WriteString(conn, "wrong password")
		return
	}
	binary.Write(conn, binary.BigEndian, uint32(0))
	io.ReadFull(conn, make([]byte, 1)) // ClientInit
	init := []byte{0, 4, 0, 2, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0}
	conn.Write(init)
	binary.Write(conn, binary.BigEndian, uint32(2))
	io.WriteString(conn, "vm")
	s.after(t, conn)
}

// start runs the server on a loopback port and dials it.
func (s rfbServer) start(t *testing.T, password string) (*Client, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.serve(t, conn)
	}()
	t.Cleanup(func() { <-done })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, ln.Addr().String(), password)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// pixels4x2 is a screen: red, green, blue, white / black ×4, as the
// server's little-endian 0x00RRGGBB words.
var pixels4x2 = []uint32{0xff0000, 0x00ff00, 0x0000ff, 0xffffff, 0, 0, 0, 0}

func TestRFBReadsTheScreenAndSendsInput(t *testing.T) {
	got := make(chan []byte, 1)
	c, err := rfbServer{password: "s3cret", after: func(t *testing.T, conn net.Conn) {
		req := make([]byte, 10)
		io.ReadFull(conn, req)
		if req[0] != 3 || binary.BigEndian.Uint16(req[6:]) != 4 || binary.BigEndian.Uint16(req[8:]) != 2 {
			t.Errorf("update request %v", req)
		}
		conn.Write([]byte{2}) // a bell first: skipped
		conn.Write([]byte{0, 0, 0, 1})
		binary.Write(conn, binary.BigEndian, []uint16{0, 0, 4, 2})
		binary.Write(conn, binary.BigEndian, int32(0))
		binary.Write(conn, binary.LittleEndian, pixels4x2)
		input := make([]byte, 8+6)
		io.ReadFull(conn, input)
		got <- input
	}}.start(t, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img, err := c.Frame(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []color.RGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 255, 255}} {
		if px := img.RGBAAt(i, 0); px != want {
			t.Errorf("pixel %d,0 = %v, want %v", i, px, want)
		}
	}
	if err := c.Key(ctx, 0xff0d, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Pointer(ctx, 3, 1, 1); err != nil {
		t.Fatal(err)
	}
	input := <-got
	if !bytes.Equal(input[:8], []byte{4, 1, 0, 0, 0, 0, 0xff, 0x0d}) || !bytes.Equal(input[8:], []byte{5, 1, 0, 3, 0, 1}) {
		t.Errorf("input on the wire: % x", input)
	}
}

func TestRFBRefusesAWrongPassword(t *testing.T) {
	_, err := rfbServer{password: "right", after: func(*testing.T, net.Conn) {}}.start(t, "wrong")
	if err == nil || !strings.Contains(err.Error(), "wrong password") {
		t.Fatalf("a wrong password: %v", err)
	}
}

// TestRFBBoundsWhatTheServerSends: a rectangle outside the screen, or a
// huge clipboard, is an error, not a write out of bounds or a big
// allocation.
func TestRFBBoundsWhatTheServerSends(t *testing.T) {
	for name, send := range map[string]func(net.Conn){
		"rectangle outside": func(conn net.Conn) {
			conn.Write([]byte{0, 0, 0, 1})
			binary.Write(conn, binary.BigEndian, []uint16{2, 0, 4, 2})
			binary.Write(conn, binary.BigEndian, int32(0))
		},
		"huge clipboard": func(conn net.Conn) {
			conn.Write([]byte{3, 0, 0, 0})
			binary.Write(conn, binary.BigEndian, uint32(1<<30))
		},
		"unasked encoding": func(conn net.Conn) {
			conn.Write([]byte{0, 0, 0, 1})
			binary.Write(conn, binary.BigEndian, []uint16{0, 0, 4, 2})
			binary.Write(conn, binary.BigEndian, int32(16)) // ZRLE
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := rfbServer{after: func(t *testing.T, conn net.Conn) {
				io.ReadFull(conn, make([]byte, 10))
				send(conn)
				io.Copy(io.Discard, conn)
			}}.start(t, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Frame(context.Background()); err == nil {
				t.Error("Frame took it")
			}
			c.Close()
		})
	}
}
