// Command plugin serves the BPMN navigator as a sextant plugin: natively as
// a go-plugin subprocess, or as a WebAssembly module built with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main

import (
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
)

func main() { sdk.Main() }
