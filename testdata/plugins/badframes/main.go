//go:build unix

// Command badframes serves the process frame transport by hand, from
// PROTOCOL-process.md rather than through sdk.Main, and breaks it on
// request (its first argument) for every call but describe: the
// containment tests' misbehaving peer on the frame level.
//
//	ok           answer correctly (the documented protocol works)
//	oversized    a response header announcing 4 GiB
//	garbage      a well-framed response that is no envelope
//	truncated    a header announcing 100 bytes, 10 bytes, then close
//	shortheader  two bytes of a header, then close
//	hang         never answer
package main

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/rpc"
)

type gate struct{}

func (gate) Describe() sdk.Info {
	return sdk.Info{Name: "badframes", Kind: sdk.KindGate, Version: "0.0.1", API: sdk.APIVersion}
}

func (gate) Check(context.Context, *sdk.Comparison) (*sdk.Verdict, error) {
	return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{"framed by hand"}}, nil
}

var mode = "ok"

func main() {
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	h := sdk.Serve(gate{})
	if v, ok := os.LookupEnv(rpc.FramesEnv); ok {
		os.Unsetenv(rpc.FramesEnv) // rpc.Serve below serves gRPC only
		fd, _ := strconv.Atoi(v)
		// The hello goes before the handshake line that rpc.Serve writes.
		if _, err := unix.Write(fd, []byte(rpc.FramesHello)); err == nil {
			go accept(fd, h)
		}
	}
	rpc.Serve(h)
}

func accept(ctrl int, h sdk.Handler) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(ctrl, buf, oob, 0)
		if err != nil || (n == 0 && oobn == 0) {
			return
		}
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			fds, _ := unix.ParseUnixRights(&m)
			for _, fd := range fds {
				f := os.NewFile(uintptr(fd), "conn")
				c, err := net.FileConn(f)
				f.Close()
				if err == nil {
					go serve(c, h)
				}
			}
		}
	}
}

func serve(c net.Conn, h sdk.Handler) {
	defer c.Close()
	for {
		var hdr [12]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		req := make([]byte, binary.BigEndian.Uint32(hdr[:4])-8)
		if _, err := io.ReadFull(c, req); err != nil {
			return
		}
		if sdk.EnvelopeMethod(req) == sdk.MethodDescribe || mode == "ok" {
			resp := h.Handle(context.Background(), req)
			c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(resp))))
			c.Write(resp)
			continue
		}
		switch mode {
		case "extra": // a good answer, then bytes no request asked for
			resp := h.Handle(context.Background(), req)
			c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(resp))), append(resp, 0, 0, 0)...))
		case "oversized":
			c.Write([]byte{0xff, 0xff, 0xff, 0xf0})
			select {} // keep the connection open: the host must not read on
		case "garbage":
			c.Write([]byte{0, 0, 0, 3, 0xc1, 0xc1, 0xc1})
		case "truncated":
			c.Write(append([]byte{0, 0, 0, 100}, "0123456789"...))
			return
		case "shortheader":
			c.Write([]byte{0, 0})
			return
		case "hang":
			select {}
		}
	}
}
