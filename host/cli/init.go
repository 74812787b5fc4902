package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/scaffold"
)

func (a *app) initCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a ready project: pipeline, routine, strategy, scripted provider, inputs, CI workflow",
		Long: `init writes a sextant project into DIR (default: the current directory):
a pipeline (pipeline.toml) with a chain routine, a strategy, the scripted
provider's answers (responses.toml, so it runs offline with no API key), two
example inputs, an empty dataset for CI (dataset.jsonl), a GitHub Actions
workflow that gates a candidate strategy with sharded replays
(.github/workflows/sextant.yml) and sextant.toml, which keeps the store in
DIR/.sextant for every command run below DIR.

init never overwrites: when any of its files exists, it writes nothing and
names them (exit 2).`,
		Example: `  sextant init support && cd support
  sextant run pipeline.toml --input inputs/refund.json --truth '{"action":"refund"}'
  sextant replay pipeline.toml`,
		Args: cobra.MaximumNArgs(1),
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
				run = "cd " + shellQuote(dir) + " && " + run
			}
			fmt.Fprintf(a.stdout, "next: %s\n", run)
			return nil
		},
	}
}
