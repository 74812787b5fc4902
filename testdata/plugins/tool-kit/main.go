// Command tool-kit serves the tool-kit plugin (see package kit). Built
// natively and started with --garbage, it answers every call but describe
// with bytes that are no envelope: the host's tests of a plugin that
// answers garbage.
package main

import (
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/testdata/plugins/tool-kit/kit"
)

func init() { sdk.Register(kit.Kit{}) }

func main() { serve() }
