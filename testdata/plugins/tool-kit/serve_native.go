//go:build !wasip1

package main

import (
	"context"
	"os"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/rpc"
	"github.com/sextant-dev/sextant/testdata/plugins/tool-kit/kit"
)

func serve() {
	if len(os.Args) > 1 && os.Args[1] == "--garbage" {
		rpc.Serve(garbage{sdk.Serve(kit.Kit{})})
		return
	}
	sdk.Main()
}

// garbage answers describe, and everything else with garbage.
type garbage struct{ h sdk.Handler }

func (g garbage) Handle(ctx context.Context, req []byte) []byte {
	if sdk.EnvelopeMethod(req) == sdk.MethodDescribe {
		return g.h.Handle(ctx, req)
	}
	return []byte("\x81\xa6result\xc1 not an envelope")
}
