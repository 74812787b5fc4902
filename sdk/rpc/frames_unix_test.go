//go:build unix

package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// handlerFunc adapts a function to Handler.
type handlerFunc func(ctx context.Context, req []byte) []byte

func (f handlerFunc) Handle(ctx context.Context, req []byte) []byte { return f(ctx, req) }

// pair is a connected unix stream socketpair: the host's end, and the
// plugin's end served by serveConn with h.
func pair(t *testing.T, h Handler) net.Conn {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	host, plugin := conn(fds[0]), conn(fds[1])
	go serveConn(plugin, h)
	t.Cleanup(func() { host.Close() })
	return host
}

func send(t *testing.T, c net.Conn, req string, timeout time.Duration) {
	t.Helper()
	b := AppendRequestHeader(nil, len(req), int64(timeout))
	if _, err := c.Write(append(b, req...)); err != nil {
		t.Fatal(err)
	}
}

func answer(t *testing.T, c net.Conn) string {
	t.Helper()
	var hdr [ResponseHeader]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFramesCallContext: a call's context costs nothing until the handler
// asks for Done; then the host closing the connection cancels it, its
// deadline ends it, and a call that returns in time leaves the connection
// as it was for the next call (the watcher consumed nothing).
func TestFramesCallContext(t *testing.T) {
	t.Run("answers", func(t *testing.T) {
		c := pair(t, handlerFunc(func(ctx context.Context, req []byte) []byte {
			if string(req) == "watch" {
				select {
				case <-ctx.Done():
					return []byte("cancelled early")
				default:
				}
			}
			if _, ok := ctx.Deadline(); !ok || ctx.Err() != nil {
				return []byte("bad context")
			}
			return append([]byte("re: "), req...)
		}))
		for _, req := range []string{"a", "watch", "b", "watch", "watch", "c"} {
			send(t, c, req, time.Minute)
			if got := answer(t, c); got != "re: "+req {
				t.Fatalf("%s: got %q", req, got)
			}
		}
	})
	t.Run("host gives up", func(t *testing.T) {
		seen := make(chan error, 1)
		c := pair(t, handlerFunc(func(ctx context.Context, req []byte) []byte {
			<-ctx.Done()
			seen <- ctx.Err()
			return nil
		}))
		send(t, c, "wait", 0)
		c.Close()
		if err := <-seen; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		c := pair(t, handlerFunc(func(ctx context.Context, req []byte) []byte {
			<-ctx.Done()
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return []byte(ctx.Err().Error())
			}
			return []byte("deadline")
		}))
		send(t, c, "wait", time.Millisecond)
		if got := answer(t, c); got != "deadline" {
			t.Fatalf("got %q", got)
		}
		send(t, c, "again", time.Millisecond) // the connection goes on
		if got := answer(t, c); got != "deadline" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("leftover goroutine", func(t *testing.T) {
		kept := make(chan context.Context, 1)
		c := pair(t, handlerFunc(func(ctx context.Context, req []byte) []byte {
			kept <- ctx
			return []byte("ok")
		}))
		send(t, c, "x", 0)
		answer(t, c)
		ctx := <-kept
		<-ctx.Done() // closed once the call is over, never a nil channel
		if ctx.Err() == nil {
			t.Fatal("no error after the call ended")
		}
	})
}
