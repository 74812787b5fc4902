//go:build !unix && !wasip1

package rpc

// serveFrames is unix only; elsewhere calls go over gRPC.
func serveFrames(Handler) error { return nil }
