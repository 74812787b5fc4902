package cli

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

func (a *app) strategyCommand() *cobra.Command {
	c := &cobra.Command{
		Use:     "strategy",
		Short:   "Show, validate, compare strategies and list their promoted versions",
		Example: help("strategy.example"),
	}
	c.AddCommand(a.strategyShowCommand(), a.strategyValidateCommand(), a.strategyDiffCommand(), a.strategyLogCommand(), a.strategyLiveCommand())
	return c
}

func (a *app) strategyShowCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "show FILE",
		Short:   "Print a strategy: identity, content hash, parameters, constraints, playbook",
		Example: "  sextant strategy show strategies/email-handler.toml\n  sextant strategy show strategies/email-handler.toml --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := strategy.Load(args[0])
			if err != nil {
				return err
			}
			return a.emit(asJSON, s.Env(), s.WriteSummary)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return c
}

func (a *app) strategyValidateCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "validate FILE...",
		Short:   "Check strategy files; every problem positioned, exit 2 on any",
		Example: help("strategy-validate.example"),
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, errs := strategy.CheckFiles(args)
			if err := a.emit(asJSON, rows, func(w io.Writer) error { return strategy.WriteChecked(w, rows) }); err != nil {
				return err
			}
			if len(errs) > 0 {
				return withInvalid(errors.Join(errs...))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output (problems are still printed on stderr)")
	return c
}

func (a *app) strategyDiffCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "diff BASE CANDIDATE",
		Short:   "Show what changed from one strategy to another: parameters, constraints, playbook deltas",
		Example: help("strategy-diff.example"),
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := strategy.Load(args[0])
			if err != nil {
				return err
			}
			cand, err := strategy.Load(args[1])
			if err != nil {
				return err
			}
			d := strategy.Diff(base, cand)
			return a.emit(asJSON, d.SDK(), d.WriteText)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return c
}

func (a *app) strategyLogCommand() *cobra.Command {
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:     "log NAME",
		Short:   "List the promoted versions of a strategy recorded in the store",
		Example: help("strategy-log.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := a.readTaskStore(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			defer s.Close()
			recs, err := s.StrategyLog(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if recs == nil {
				recs = []store.StrategyRecord{} // [] in JSON
			}
			return a.emit(asJSON, recs, func(w io.Writer) error { return evolve.WriteStrategyLog(cmd.Context(), w, s, args[0], recs) })
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, true)
	return c
}
