// Command plugin serves the chain navigator as a sextant plugin: a
// go-plugin binary when built natively, a WebAssembly module when built with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared. The navigator
// registers itself in its package's init, which runs in both builds.
package main

import (
	_ "github.com/sextant-dev/sextant/navigators/chain"
	"github.com/sextant-dev/sextant/sdk"
)

func main() { sdk.Main() }
