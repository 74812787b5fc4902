package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/sdk"
)

// version is set at link time: -ldflags "-X github.com/sextant-dev/sextant/host/cli.version=v1.2.3".
var version = "dev"

type versionInfo struct {
	Version string `json:"version"`
	API     int    `json:"api"`
	Go      string `json:"go"`
	Wazero  string `json:"wazero,omitempty"`
	OSArch  string `json:"os_arch"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, API: sdk.APIVersion, Go: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				v.Wazero = d.Version
			}
		}
	}
	return v
}

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print the sextant version and the plugin api it speaks",
		Example: "  sextant version\n  sextant version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			if asJSON {
				return writeJSON(a.stdout, v)
			}
			fmt.Fprintf(a.stdout, "sextant %s (plugin api %d, %s, %s)\n", v.Version, v.API, v.Go, v.OSArch)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return c
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
