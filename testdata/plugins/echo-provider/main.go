// Command echo-provider serves the echo provider as a plugin (see package echo).
package main

import (
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/testdata/plugins/echo-provider/echo"
)

func init() { sdk.Register(echo.Echo{}) }

func main() { sdk.Main() }
