package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// FuzzRequestLine feeds arbitrary lines to a connection and requires that the
// agent neither crashes nor hangs: every line is answered, ignored or closes
// the connection, and the server keeps serving. run_shell is replaced, so no
// fuzzed command ever runs; the file tools work inside a temporary share.
func FuzzRequestLine(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"hello","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"hello","params":{"protocolVersion":2,"challenge":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","enrollKey":"WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlo="}}`,
		`{"jsonrpc":"2.0","id":"a","method":"mouse_click","params":{"x":10,"y":10,"button":"right","clickType":"triple"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"read_file","params":{"path":"../../etc/passwd"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"write_file","params":{"path":"outbox/a.txt","contents":"x"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"write_file","params":{"path":"outbox/b.bin","base64":"AAEC"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"screenshot","params":{"format":"jpeg","maxWidth":100,"quality":101}}`,
		`{"jsonrpc":"2.0","id":6,"method":"keyboard_key","params":{"key":"a","modifiers":["cmd","hyper"]}}`,
		`{"jsonrpc":"2.0","id":7,"method":"wait","params":{"seconds":1e308}}`,
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":{"nested":[1,2]}}}`,
		`[{"jsonrpc":"2.0","id":8,"method":"health_check"},{"jsonrpc":"2.0","id":9,"method":"list_directory","params":{"path":""}}]`,
		`[]`, `{}`, `null`, `{"jsonrpc":"1.0","id":1,"method":"hello"}`, `{"jsonrpc":"2.0","id":1,"method":"hello","params":"x"}`,
		`{"jsonrpc":"2.0","id":10,"method":"move_file","params":{"source":"inbox","destination":"/"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"keyboard_type\",\"params\":{\"text\":\"\\u0000\\ud800\"}}",
		`{"jsonrpc":"2.0","id":12,"method":"run_shell","params":{"command":"echo hi"}}`,
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	srv, err := New(Config{SharedDir: dir, Driver: &fakeDriver{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), AgentVersion: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	srv.handlers[protocol.MethodRunShell] = func(context.Context, *jrpc2.Request) (any, error) {
		return protocol.ShellResult{Stdout: "not run while fuzzing"}, nil
	}
	f.Fuzz(func(t *testing.T, line string) {
		client, conn := net.Pipe()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- srv.ServeConn(ctx, conn) }()
		go func() {
			client.Write(append([]byte(line), '\n'))
		}()
		client.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		bufio.NewReader(client).ReadString('\n') // an answer, or none for a notification
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("connection for %q did not end", line)
		}
	})
}
