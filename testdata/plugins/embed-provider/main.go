// Command embed-provider serves the local embedding provider as a plugin
// (see package local), natively and as a wasm module.
package main

import (
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/testdata/plugins/embed-provider/local"
)

func init() { sdk.Register(local.Local{}) }

func main() { serve() }
