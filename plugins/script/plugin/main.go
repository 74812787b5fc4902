// Command script serves the script provider as a plugin (native or wasm).
package main

import (
	_ "github.com/sextant-dev/sextant/plugins/script"
	"github.com/sextant-dev/sextant/sdk"
)

func main() { sdk.Main() }
