// Command anthropic serves the anthropic provider as a plugin (native or wasm).
package main

import (
	_ "github.com/sextant-dev/sextant/plugins/anthropic"
	"github.com/sextant-dev/sextant/sdk"
)

func main() { sdk.Main() }
