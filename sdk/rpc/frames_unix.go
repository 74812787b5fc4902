//go:build unix

package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// serveFrames starts serving frames when the host asked for them (FramesEnv
// is set): it says hello on the control socket and serves every connection
// the host passes over it. It must run before the go-plugin handshake line
// is written, so that the hello is there when the host looks for it.
func serveFrames(h Handler) error {
	v, ok := os.LookupEnv(FramesEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(FramesEnv) // not for the plugin's own children
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return fmt.Errorf("%s=%q: not a file descriptor", FramesEnv, v)
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "sextant-frames")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("frames control socket: %w", err)
	}
	ctrl, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return fmt.Errorf("frames control socket: not a unix socket")
	}
	if _, err := ctrl.Write([]byte(FramesHello)); err != nil {
		ctrl.Close()
		return fmt.Errorf("frames control socket: hello: %w", err)
	}
	go acceptFrames(ctrl, h)
	return nil
}

// acceptFrames receives connections (SCM_RIGHTS) until the host closes the
// control socket.
func acceptFrames(ctrl *net.UnixConn, h Handler) {
	defer ctrl.Close()
	raw, err := ctrl.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		var n, oobn int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
			return rerr != unix.EAGAIN
		})
		if err != nil || rerr != nil || (n == 0 && oobn == 0) {
			return // the host closed it, or the plugin is going down
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			fds, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			for _, fd := range fds {
				f := os.NewFile(uintptr(fd), "sextant-frames-conn")
				c, err := net.FileConn(f)
				f.Close()
				if err != nil {
					continue
				}
				go serveConn(c, h)
			}
		}
	}
}

// serveConn answers the frames of one connection, one call at a time, in
// this goroutine: read a request, handle it, write the answer. The host
// sends the next request only once it has the answer to the last, so the
// request buffer is free again by then, and nothing is read during a
// call unless the handler asks for its context's Done channel (see
// callCtx): the host closing the connection (its caller gave up) then
// cancels the call in progress.
func serveConn(c net.Conn, h Handler) {
	defer c.Close()
	var buf []byte
	var hdr [ResponseHeader]byte
	// A request's header and body usually arrive together: one read
	// syscall for both. The host sends nothing past a request before its
	// answer, so the buffer is empty whenever a call is in progress (and
	// the watcher reads the connection itself).
	r := bufio.NewReaderSize(c, 16<<10)
	for {
		env, timeout, b, err := ReadRequest(r, buf)
		buf = b
		if err != nil {
			return
		}
		ctx := newCallCtx(c, timeout)
		resp := h.Handle(ctx, env)
		if !ctx.finish() {
			return // the host closed the connection: nobody waits for the answer
		}
		binary.BigEndian.PutUint32(hdr[:], uint32(len(resp)))
		bufs := net.Buffers{hdr[:], resp}
		if _, err := bufs.WriteTo(c); err != nil {
			return
		}
	}
}

// callCtx is the context of one framed call. It costs nothing unless the
// handler asks for Done: only then does it arm a timer for the call's
// deadline and start watching the connection, which carries nothing more
// during a call, so any read that returns means the host closed it.
type callCtx struct {
	c        net.Conn
	deadline time.Time // zero: none

	once    sync.Once
	mu      sync.Mutex
	done    chan struct{}
	err     error
	timer   *time.Timer
	watched chan struct{} // closed when the watcher has returned
	// finishing is set before finish wakes the watcher, gone when the
	// watcher saw the connection end (or a byte the protocol forbids).
	finishing, gone atomic.Bool
}

// aLongTimeAgo is a deadline in the past: setting it wakes a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

func newCallCtx(c net.Conn, timeoutNS int64) *callCtx {
	ctx := &callCtx{c: c}
	if timeoutNS > 0 {
		ctx.deadline = time.Now().Add(time.Duration(timeoutNS))
	}
	return ctx
}

func (ctx *callCtx) Deadline() (time.Time, bool) { return ctx.deadline, !ctx.deadline.IsZero() }

func (ctx *callCtx) Value(any) any { return nil }

func (ctx *callCtx) Done() <-chan struct{} {
	ctx.once.Do(func() {
		ctx.mu.Lock()
		ctx.done = make(chan struct{})
		if ctx.err != nil { // finished already: a call's leftover goroutine
			close(ctx.done)
			ctx.mu.Unlock()
			return
		}
		ctx.mu.Unlock()
		if !ctx.deadline.IsZero() {
			ctx.timer = time.AfterFunc(time.Until(ctx.deadline), func() { ctx.cancel(context.DeadlineExceeded) })
		}
		ctx.watched = make(chan struct{})
		go ctx.watch()
	})
	return ctx.done
}

func (ctx *callCtx) Err() error {
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	if ctx.err == nil && !ctx.deadline.IsZero() && !time.Now().Before(ctx.deadline) {
		return context.DeadlineExceeded
	}
	return ctx.err
}

func (ctx *callCtx) cancel(err error) {
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	if ctx.err != nil {
		return
	}
	ctx.err = err
	if ctx.done != nil {
		close(ctx.done)
	}
}

// watch reads the connection during the call: it returns when the host
// closes it (the call is cancelled) or when finish wakes it.
func (ctx *callCtx) watch() {
	defer close(ctx.watched)
	var one [1]byte
	n, err := ctx.c.Read(one[:])
	if n == 0 && ctx.finishing.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	ctx.gone.Store(true)
	ctx.cancel(context.Canceled)
}

// finish ends the call: it stops the timer and the watcher, and reports
// whether the connection can carry the answer and the next call.
func (ctx *callCtx) finish() bool {
	ctx.cancel(context.Canceled) // a goroutine the handler left behind sees it ended
	ctx.once.Do(func() {         // no watcher from now on; Done is closed
		ctx.mu.Lock()
		ctx.done = make(chan struct{})
		close(ctx.done)
		ctx.mu.Unlock()
	})
	if ctx.watched == nil {
		return true
	}
	if ctx.timer != nil {
		ctx.timer.Stop()
	}
	ctx.finishing.Store(true)
	ctx.c.SetReadDeadline(aLongTimeAgo)
	<-ctx.watched
	if ctx.gone.Load() {
		return false
	}
	return ctx.c.SetReadDeadline(time.Time{}) == nil
}
