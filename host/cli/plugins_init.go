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
		Use:     "init --kind navigator|provider|gate|tool NAME",
		Short:   "Write a ready-to-build plugin project",
		Long:    help("plugins-init"),
		Example: help("plugins-init.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := scaffold.NewPlugin(args[0], kind, module)
			if err != nil {
				return usageErr(err)
			}
			src, err := scaffold.LocateSDK(sdkPath)
			if errors.Is(err, sdk.ErrInvalid) {
				return usageErr(fmt.Errorf("--sdk: %w", err))
			} else if err != nil {
				return err
			}
			target := filepath.Join(dir, p.Name)
			if err := scaffold.WritePlugin(target, p, src); errors.Is(err, sdk.ErrInvalid) {
				return usageErr(err)
			} else if err != nil {
				return err
			}
			return p.WriteNext(a.stderr, a.stdout, target, src)
		},
	}
	c.Flags().StringVar(&kind, "kind", "", "plugin kind: navigator, provider, gate or tool (required)")
	c.Flags().StringVar(&dir, "dir", ".", "directory to create the project folder in")
	c.Flags().StringVar(&sdkPath, "sdk", "", "local sextant checkout to build against through a go.work (default: none for a released sextant, this binary's source tree otherwise)")
	c.Flags().StringVar(&module, "module", "", "Go module path of the new project (default example.com/NAME)")
	_ = c.MarkFlagRequired("kind")
	return c
}
