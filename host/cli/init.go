package cli

import (
	"fmt"

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
			fmt.Fprintf(a.stdout, "wrote %d files in %s:\n", len(files), dir)
			for _, f := range files {
				fmt.Fprintf(a.stdout, "  %s\n", f)
			}
			run := "sextant run pipeline.toml --input inputs/refund.json --truth '{\"action\":\"refund\"}'"
			if dir != "." {
				run = "cd " + report.ShellQuote(dir) + " && " + run
			}
			fmt.Fprintf(a.stdout, "next: %s\n", run)
			return nil
		},
	}
}
