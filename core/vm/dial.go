package vm

import (
	"context"
	"net"
)

// DialContext runs dial, which takes no context (a framework call that
// waits for its completion handler), so that the caller returns when ctx
// ends: dial goes on aside, and a connection it makes after that is
// closed, never leaked.
func DialContext(ctx context.Context, dial func() (net.Conn, error)) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := dial()
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil && r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
