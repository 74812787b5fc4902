package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
)

// ServeStore listens on addr and serves until ctx ends, with InfoFile in
// the store directory dir naming this process while it does (so commands
// given the same store go through the API: Discover), and says on w where
// it listens. The end of ctx is a clean stop.
func (s *Server) ServeStore(ctx context.Context, addr, dir string, w io.Writer) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	url := "http://" + l.Addr().String()
	removeInfo, err := WriteInfo(dir, Info{URL: url, PID: os.Getpid()})
	if err != nil {
		l.Close()
		return err
	}
	defer removeInfo()
	fmt.Fprintf(w, "sextant serve: listening on %s (store %s)\n", url, dir)
	if err := s.Serve(ctx, l); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
