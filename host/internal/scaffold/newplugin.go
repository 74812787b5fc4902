package scaffold

import (
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/sdk"
)

// NewPlugin is the project of a plugin of kind named name (sextant plugins
// init), at the plugin API this host speaks, in module (default
// example.com/NAME). A name or kind that is not valid is sdk.ErrInvalid.
func NewPlugin(name, kind, module string) (Plugin, error) {
	if !sdk.ValidName(name) {
		return Plugin{}, invalid("plugin name %q: want lowercase words joined by - or _", name)
	}
	if !sdk.Kind(kind).Valid() {
		return Plugin{}, invalid("--kind: %q is not navigator, provider, gate or tool", kind)
	}
	if module == "" {
		module = "example.com/" + name
	}
	return Plugin{Name: name, Kind: kind, API: sdk.APIVersion, Module: module, Description: "a " + kind + " plugin"}, nil
}

// WriteNext says what WritePlugin wrote into dir (on notes) and the
// commands that build the project natively and to WebAssembly and test it
// (on out, one a line, to copy).
func (p Plugin) WriteNext(notes, out io.Writer, dir string, src SDK) error {
	fmt.Fprintf(notes, "wrote %s plugin %q in %s (sdk %s", p.Kind, p.Name, dir, src.Version)
	if src.Dir != "" {
		fmt.Fprintf(notes, ", built from %s through go.work", src.Dir)
	}
	fmt.Fprintln(notes, "); build it with:")
	_, err := fmt.Fprintf(out, "go -C %s build -o %s .\nGOOS=wasip1 GOARCH=wasm go -C %s build -buildmode=c-shared -o %s.wasm .\nmake -C %s test\n",
		dir, p.Name, dir, p.Name, dir)
	return err
}
