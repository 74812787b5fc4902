package sdk

import (
	"bytes"
	_ "embed"
)

// The sdk module's go.mod and go.sum, compiled into the programs that call
// ModuleFiles (the sextant CLI) and dropped by the linker everywhere else.
var (
	//go:embed go.mod
	moduleGoMod []byte
	//go:embed go.sum
	moduleGoSum []byte
)

// ModulePath is the sdk's Go module path: the one module a plugin requires.
const ModulePath = "github.com/sextant-dev/sextant/sdk"

// ModuleFiles returns the go.mod and go.sum of the sdk module this program
// was built with. `sextant plugins init` writes a new plugin's go.mod and
// go.sum from them, so the plugin requires what this sdk version requires and
// builds from the module cache without asking the network what they are.
func ModuleFiles() (goMod, goSum []byte) {
	return bytes.Clone(moduleGoMod), bytes.Clone(moduleGoSum)
}
