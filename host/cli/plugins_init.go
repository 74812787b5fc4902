package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/scaffold"
	"github.com/sextant-dev/sextant/sdk"
)

func (a *app) pluginsInitCommand() *cobra.Command {
	var kind, dir, sdkPath, module string
	c := &cobra.Command{
		Use:   "init --kind navigator|provider|gate|tool NAME",
		Short: "Write a ready-to-build plugin project",
		Long:  help("plugins-init"),
		Example: `  sextant plugins init --kind gate pii-gate
  sextant plugins init --kind tool word-tools
  sextant plugins init --kind navigator --dir ~/src --sdk ~/src/sextant my-nav`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := scaffold.Plugin{Name: args[0], Kind: kind, API: sdk.APIVersion, Module: module,
				Description: "a " + kind + " plugin"}
			if !sdk.ValidName(p.Name) {
				return usageErr(fmt.Errorf("plugin name %q: want lowercase words joined by - or _", p.Name))
			}
			if !sdk.Kind(kind).Valid() {
				return usageErr(fmt.Errorf("--kind: %q is not navigator, provider, gate or tool", kind))
			}
			if p.Module == "" {
				p.Module = "example.com/" + p.Name
			}
			target := filepath.Join(dir, p.Name)
			src, err := scaffold.LocateSDK(sdkPath)
			if errors.Is(err, sdk.ErrInvalid) {
				return usageErr(fmt.Errorf("--sdk: %w", err))
			} else if err != nil {
				return err
			}
			if err := scaffold.WritePlugin(target, p, src); errors.Is(err, sdk.ErrInvalid) {
				return usageErr(err)
			} else if err != nil {
				return err
			}
			a.printPluginInit(p, target, src)
			return nil
		},
	}
	c.Flags().StringVar(&kind, "kind", "", "plugin kind: navigator, provider, gate or tool (required)")
	c.Flags().StringVar(&dir, "dir", ".", "directory to create the project folder in")
	c.Flags().StringVar(&sdkPath, "sdk", "", "local sextant checkout to build against through a go.work (default: none for a released sextant, this binary's source tree otherwise)")
	c.Flags().StringVar(&module, "module", "", "Go module path of the new project (default example.com/NAME)")
	_ = c.MarkFlagRequired("kind")
	return c
}

// printPluginInit says what plugins init wrote (on stderr) and the commands
// that build and test it (on stdout).
func (a *app) printPluginInit(p scaffold.Plugin, target string, src scaffold.SDK) {
	fmt.Fprintf(a.stderr, "wrote %s plugin %q in %s (sdk %s", p.Kind, p.Name, target, src.Version)
	if src.Dir != "" {
		fmt.Fprintf(a.stderr, ", built from %s through go.work", src.Dir)
	}
	fmt.Fprintln(a.stderr, "); build it with:")
	fmt.Fprintf(a.stdout, "go -C %s build -o %s .\n", target, p.Name)
	fmt.Fprintf(a.stdout, "GOOS=wasip1 GOARCH=wasm go -C %s build -buildmode=c-shared -o %s.wasm .\n", target, p.Name)
	fmt.Fprintf(a.stdout, "make -C %s test\n", target)
}
