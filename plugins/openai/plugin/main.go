// Command openai serves the openai provider as a plugin (native or wasm).
package main

import (
	_ "github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/sdk"
)

func main() { sdk.Main() }
