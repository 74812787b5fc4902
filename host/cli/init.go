package cli

import (
	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/scaffold"
)

func (a *app) initCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "init [DIR]",
		Short:   "Write a ready project: pipeline, routine, strategy, scripted provider, inputs, CI workflow",
		Long:    help("init"),
		Example: help("init.example"),
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			files, err := scaffold.WriteProject(dir)
			if err != nil {
				return err
			}
			return report.WriteProjectWritten(a.stdout, dir, files)
		},
	}
}
