package transport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestLineRoundTripAndCap(t *testing.T) {
	var wire bytes.Buffer
	out := LineWithLimit(nil, nopCloser{&wire}, 32)
	for _, m := range []string{`{"a":1}`, strings.Repeat("x", 32)} {
		if err := out.Send([]byte(m)); err != nil {
			t.Fatalf("Send(%d bytes): %v", len(m), err)
		}
	}
	if err := out.Send([]byte(strings.Repeat("x", 33))); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("Send over the cap = %v", err)
	}
	if err := out.Send([]byte("a\nb")); err == nil {
		t.Fatal("Send of a message with a newline succeeded")
	}

	wire.WriteString(strings.Repeat("y", 40) + "\n")
	wire.WriteString("partial")
	in := LineWithLimit(&wire, nopCloser{io.Discard}, 32)
	for _, want := range []string{`{"a":1}`, strings.Repeat("x", 32)} {
		got, err := in.Recv()
		if err != nil || string(got) != want {
			t.Fatalf("Recv = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := in.Recv(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("Recv of a 40-byte line with a 32-byte cap = %v", err)
	}
}

func TestLineAcrossBufferBoundaries(t *testing.T) {
	big := strings.Repeat("z", 200<<10) // larger than the 64 KiB read buffer
	in := LineWithLimit(strings.NewReader(big+"\nshort\npartial"), nopCloser{io.Discard}, 1<<20)
	got, err := in.Recv()
	if err != nil || string(got) != big {
		t.Fatalf("big line: %d bytes, %v", len(got), err)
	}
	got, err = in.Recv()
	if err != nil || string(got) != "short" {
		t.Fatalf("short line: %q, %v", got, err)
	}
	if _, err := in.Recv(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("partial last line = %v, want unexpected EOF", err)
	}
	if _, err := in.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the end = %v, want EOF", err)
	}
}
