//go:build unix

package process

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sextant-dev/sextant/sdk/rpc"
)

// framesPair makes the control socket of the frame transport: the host's
// end, and the child's end to pass as one of its ExtraFiles. Both are
// close-on-exec here; exec.Cmd dups the child's end into the child
// without the flag.
func framesPair() (host, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("frames socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "sextant-frames-host"), os.NewFile(uintptr(fds[1]), "sextant-frames-child"), nil
}

// frames is the host's side of one child's frame transport: the control
// socket over which it passes new connections, and the idle connections.
type frames struct {
	ctrl *net.UnixConn

	mu     sync.Mutex
	idle   []*frameConn
	closed bool
}

// frameConn is one synchronous connection: one call at a time.
type frameConn struct {
	c   *net.UnixConn
	hdr [rpc.RequestHeader]byte
	// rbuf takes a response's header and (most often) its body in one
	// read; extra is set when a read brought bytes past the response,
	// which the protocol forbids: the connection is then not reused.
	rbuf  []byte
	extra bool
}

// readAhead bounds the bytes one read takes past a response's header.
const readAhead = 16 << 10

// maxIdle bounds the connections kept open between calls; more concurrent
// callers get connections that are closed after their call.
const maxIdle = 16

// openFrames checks whether the child said hello on the control socket
// before its handshake line (so it is there by now, or never) and returns
// its frame transport, or nil when it serves gRPC only.
func openFrames(host *os.File) (*frames, error) {
	c, err := net.FileConn(host)
	host.Close()
	if err != nil {
		return nil, fmt.Errorf("frames control socket: %w", err)
	}
	ctrl := c.(*net.UnixConn)
	raw, err := ctrl.SyscallConn()
	if err != nil {
		ctrl.Close()
		return nil, err
	}
	buf := make([]byte, 64)
	n, rerr := 0, error(nil)
	if err := raw.Read(func(fd uintptr) bool {
		n, rerr = unix.Read(int(fd), buf)
		return true // never wait: the hello is there already or not at all
	}); err != nil {
		rerr = err
	}
	if rerr != nil || string(buf[:max(n, 0)]) != rpc.FramesHello {
		ctrl.Close()
		return nil, nil
	}
	return &frames{ctrl: ctrl}, nil
}

// get returns an idle connection or passes a new one to the child.
func (f *frames) get() (*frameConn, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, net.ErrClosed
	}
	if n := len(f.idle); n > 0 {
		fc := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return fc, nil
	}
	f.mu.Unlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("frames socketpair: %w", err)
	}
	_, _, err = f.ctrl.WriteMsgUnix([]byte{0}, unix.UnixRights(fds[1]), nil)
	unix.Close(fds[1])
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("pass a connection: %w", err)
	}
	file := os.NewFile(uintptr(fds[0]), "sextant-frames-conn")
	c, err := net.FileConn(file)
	file.Close()
	if err != nil {
		return nil, fmt.Errorf("frames connection: %w", err)
	}
	return &frameConn{c: c.(*net.UnixConn)}, nil
}

// put keeps a connection whose last call completed for the next caller.
func (f *frames) put(fc *frameConn) {
	f.mu.Lock()
	if !f.closed && len(f.idle) < maxIdle {
		f.idle = append(f.idle, fc)
		fc = nil
	}
	f.mu.Unlock()
	if fc != nil {
		fc.c.Close()
	}
}

// close closes the control socket and the idle connections; calls in
// flight fail on their own.
func (f *frames) close() {
	f.mu.Lock()
	idle := f.idle
	f.idle, f.closed = nil, true
	f.mu.Unlock()
	for _, fc := range idle {
		fc.c.Close()
	}
	f.ctrl.Close()
}

// errTooLarge marks a response frame over the message limit.
type errTooLarge struct{ n uint32 }

func (e errTooLarge) Error() string { return fmt.Sprintf("response of %d bytes", e.n) }

// aLongTimeAgo is a deadline in the past: setting it wakes a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// call sends one request and reads its answer before deadline, or until
// ctx ends. The connection goes back to the pool only after a complete
// exchange; after any failure it is closed, since a late answer would be
// read as the next call's.
func (f *frames) call(ctx context.Context, deadline time.Time, request []byte) ([]byte, error) {
	fc, err := f.get()
	if err != nil {
		return nil, err
	}
	resp, err := fc.exchange(ctx, deadline, request)
	if err != nil || fc.extra {
		fc.c.Close()
		return resp, err
	}
	f.put(fc)
	return resp, nil
}

func (fc *frameConn) exchange(ctx context.Context, deadline time.Time, request []byte) ([]byte, error) {
	if err := fc.c.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { fc.c.SetDeadline(aLongTimeAgo) })
		defer stop()
	}
	hdr := rpc.AppendRequestHeader(fc.hdr[:0], len(request), int64(time.Until(deadline)))
	bufs := net.Buffers{hdr, request}
	if _, err := bufs.WriteTo(fc.c); err != nil {
		return nil, err
	}
	if fc.rbuf == nil {
		fc.rbuf = make([]byte, readAhead)
	}
	got, err := io.ReadAtLeast(fc.c, fc.rbuf, rpc.ResponseHeader)
	if err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(fc.rbuf[:rpc.ResponseHeader])
	if n > rpc.MaxMessage {
		return nil, errTooLarge{n}
	}
	resp := make([]byte, n)
	m := copy(resp, fc.rbuf[rpc.ResponseHeader:got])
	fc.extra = got-rpc.ResponseHeader > m
	if m < len(resp) {
		k, err := io.ReadFull(fc.c, resp[m:])
		if err == io.EOF && m > 0 {
			err = io.ErrUnexpectedEOF // cut off in the body, as io.ReadFull of all of it says
		}
		if err != nil {
			return nil, fmt.Errorf("response truncated after %d of %d bytes: %w", m+k, n, err)
		}
	}
	return resp, nil
}

// frameRoundTrip is RoundTrip over frames: under min(ctx's deadline,
// CallTimeout), with no context or goroutine of its own.
func (p *Plugin) frameRoundTrip(ctx context.Context, in *instance, request []byte) ([]byte, error) {
	defer in.out.flush()
	if err := ctx.Err(); err != nil {
		// Not started: a call under a context already done could
		// otherwise finish before the context's AfterFunc cut it off.
		return nil, p.errorf(err, "%s: %v", method(request), err)
	}
	deadline := time.Now().Add(p.cfg.CallTimeout)
	callerDeadline := false
	if d, ok := ctx.Deadline(); ok && !d.After(deadline) {
		deadline, callerDeadline = d, true
	}
	resp, err := in.fr.call(ctx, deadline, request)
	if err == nil {
		p.succeeded(in)
		return resp, nil
	}
	return nil, p.frameFault(ctx, in, request, err, callerDeadline)
}

// frameFault classifies a failed frame call as callFault does a gRPC one.
func (p *Plugin) frameFault(ctx context.Context, in *instance, request []byte, err error, callerDeadline bool) error {
	m := method(request)
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	var tooLarge errTooLarge
	switch {
	case closed:
		return p.errorf(ErrClosed, "closed during %s", m)
	case errors.As(err, &tooLarge):
		// Only this connection is lost: the rest of the answer is unread.
		return p.errorf(err, "%s: response of %d bytes is over the %s message limit", m, tooLarge.n, size(rpc.MaxMessage))
	case errors.Is(ctx.Err(), context.Canceled):
		// The caller gave up; closing the connection told the plugin.
		return p.errorf(context.Canceled, "%s: %v", m, context.Canceled)
	case errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil:
		// See callFault: a plugin that keeps a call past its deadline is
		// looping or stuck, and killing it is the only way to get the
		// CPU and memory back.
		fault := fmt.Sprintf("%s: no answer within %s (process killed)", m, p.cfg.CallTimeout)
		if callerDeadline || ctx.Err() != nil {
			fault = fmt.Sprintf("%s: %v (process killed)", m, context.DeadlineExceeded)
		}
		p.log.Warn("plugin fault", "fault", fault)
		p.retire(in, fault)
		return p.errorf(context.DeadlineExceeded, "%s", fault)
	}
	if in.waitExit(exitWait) {
		fault := in.exitFault() + " during " + m
		if l := in.out.crashLine(); l != "" && !in.out.oom() {
			fault += ": " + l
		}
		p.log.Warn("plugin fault", "fault", fault)
		p.retire(in, fault)
		return p.errorf(ErrExited, "%s", fault)
	}
	fault := fmt.Sprintf("%s: connection lost (%v, process killed)", m, err)
	p.log.Warn("plugin fault", "fault", fault)
	p.retire(in, fault)
	return p.errorf(err, "%s", fault)
}
