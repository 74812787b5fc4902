//go:build !unix

package process

import (
	"context"
	"errors"
	"os"
)

// The frame transport is unix only; elsewhere every call goes over gRPC.

type frames struct{}

func framesPair() (host, child *os.File, err error) { return nil, nil, nil }

func openFrames(*os.File) (*frames, error) { return nil, nil }

func (*frames) close() {}

func (p *Plugin) frameRoundTrip(context.Context, *instance, []byte) ([]byte, error) {
	return nil, errors.New("frames: not supported on this system")
}
