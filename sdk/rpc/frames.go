//go:build !wasip1

package rpc

import (
	"encoding/binary"
	"fmt"
	"io"
)

// The frame transport carries calls to a process plugin over a private
// unix socket instead of gRPC: one length-prefixed frame in, one out, on
// one synchronous connection per concurrent caller. go-plugin still starts
// the plugin, handshakes, restarts it and collects its logs; a plugin that
// does not serve frames (any plugin written against PROTOCOL-process.md's
// gRPC service alone) is called over gRPC as before. See
// PROTOCOL-process.md, "Frames".
const (
	// FramesEnv names the environment variable that holds the file
	// descriptor number of the plugin's end of the control socket.
	FramesEnv = "SEXTANT_FRAMES_FD"
	// FramesHello is the message a plugin sends on the control socket,
	// before its handshake line, to say that it serves frames.
	FramesHello = "sextant-frames/1"
	// RequestHeader is the size of a request frame's header: the length
	// (4 bytes) and the timeout (8 bytes).
	RequestHeader = 12
	// ResponseHeader is the size of a response frame's header: the length.
	ResponseHeader = 4
)

// AppendRequestHeader appends the header of a request frame carrying an
// envelope of n bytes with the given timeout in nanoseconds (0 for none).
func AppendRequestHeader(b []byte, n int, timeoutNS int64) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(8+n))
	return binary.BigEndian.AppendUint64(b, uint64(timeoutNS))
}

// ReadRequest reads one request frame from r into buf (grown as needed)
// and returns the envelope and the timeout. io.EOF means the host closed
// the connection between calls.
func ReadRequest(r io.Reader, buf []byte) (envelope []byte, timeoutNS int64, _ []byte, err error) {
	var hdr [RequestHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, buf, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 8 || n-8 > MaxMessage {
		return nil, 0, buf, fmt.Errorf("request frame of %d bytes is outside 8 bytes to 64 MiB + 8", n)
	}
	n -= 8
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, 0, buf, fmt.Errorf("request frame truncated: %w", err)
	}
	return buf, int64(binary.BigEndian.Uint64(hdr[4:])), buf, nil
}
