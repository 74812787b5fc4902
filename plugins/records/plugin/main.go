// Command records serves the records tool plugin (native or wasm).
package main

import (
	_ "github.com/sextant-dev/sextant/plugins/records"
	"github.com/sextant-dev/sextant/sdk"
)

func main() { sdk.Main() }
