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

// CheckFlags refuses sextant serve's command line before anything is
// opened: limits that cannot work (CheckLimitFlags), an address that does
// not parse, and an address other than loopback without the bearer token
// of TokenEnv.
func CheckFlags(addr, token string, lim Limits) error {
	if err := CheckLimitFlags(lim); err != nil {
		return err
	}
	loop, err := Loopback(addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	if !loop && token == "" {
		return fmt.Errorf("--addr %s is not loopback: set %s to the bearer token every request must send", addr, TokenEnv)
	}
	return nil
}
