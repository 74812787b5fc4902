//go:build unix

package rpc

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
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

// serveConn answers the frames of one connection, one call at a time, on
// a second goroutine: this one goes straight back to reading, so that the
// host closing the connection (its caller gave up) cancels the call in
// progress. The host sends the next request only once it has the answer
// to the last, so the request buffer is free again by then.
func serveConn(c net.Conn, h Handler) {
	type call struct {
		ctx  context.Context
		stop context.CancelFunc
		env  []byte
	}
	calls := make(chan call)
	go func() {
		var hdr [ResponseHeader]byte
		for cl := range calls {
			resp := h.Handle(cl.ctx, cl.env)
			cl.stop()
			binary.BigEndian.PutUint32(hdr[:], uint32(len(resp)))
			bufs := net.Buffers{hdr[:], resp}
			if _, err := bufs.WriteTo(c); err != nil {
				c.Close()
			}
		}
	}()
	var buf []byte
	stop := context.CancelFunc(func() {})
	for {
		env, timeout, b, err := ReadRequest(c, buf)
		buf = b
		if err != nil {
			break
		}
		var ctx context.Context
		if timeout > 0 {
			ctx, stop = context.WithTimeout(context.Background(), time.Duration(timeout))
		} else {
			ctx, stop = context.WithCancel(context.Background())
		}
		calls <- call{ctx: ctx, stop: stop, env: env}
	}
	stop() // the call in progress, if any: nobody waits for its answer
	close(calls)
	c.Close()
}
