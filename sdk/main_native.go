//go:build !wasip1

package sdk

import (
	"fmt"
	"os"

	"github.com/sextant-dev/sextant/sdk/rpc"
)

// Main serves the single registered plugin as a go-plugin subprocess. It
// never returns. Run by hand (not by the host), it explains itself and
// exits with status 1.
func Main() {
	p, err := only()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sextant plugin:", err)
		os.Exit(2)
	}
	rpc.Serve(Serve(p))
	os.Exit(0)
}
