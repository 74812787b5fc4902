package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

func (a *app) strategyCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "strategy",
		Short: "Show, validate, compare strategies and list their promoted versions",
		Example: `  sextant strategy validate strategies/email-handler.toml
  sextant strategy diff strategies/email-handler.toml candidates/email-handler-2.1.0.toml`,
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
			if asJSON {
				return writeJSON(a.stdout, s.Env())
			}
			m := s.Metadata
			fmt.Fprintf(a.stdout, "%s %s", m.Name, m.Version)
			if m.ParentVersion != "" {
				fmt.Fprintf(a.stdout, " (parent %s)", m.ParentVersion)
			}
			fmt.Fprintf(a.stdout, "\nhash %s\n", s.Hash())
			if m.Description != "" {
				fmt.Fprintln(a.stdout, m.Description)
			}
			fmt.Fprintln(a.stdout, "\nparameters:")
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			for _, name := range sortedParams(s.Parameters) {
				b := s.Bounds(name)
				fmt.Fprintf(w, "  %s\t%g\t[%g, %g]\n", name, s.Parameters[name], b.Lo, b.Hi)
			}
			w.Flush()
			c := s.Constraints
			fmt.Fprintln(a.stdout, "\nconstraints:")
			fmt.Fprintf(a.stdout, "  never_execute        %s\n", strings.Join(c.NeverExecute, ", "))
			fmt.Fprintf(a.stdout, "  must_confirm_before  %s\n", strings.Join(c.MustConfirmBefore, ", "))
			fmt.Fprintf(a.stdout, "  prefer_confirm_for   %s\n", strings.Join(c.PreferConfirmFor, ", "))
			e := s.Evolution
			fmt.Fprintf(a.stdout, "\nevolution: max_parameter_delta %g, cooldown %s, requires_human_review %v, branch %s\n",
				e.MaxParameterDelta, strategy.FormatDuration(e.Cooldown), e.RequiresHumanReview, e.BranchType)
			if len(s.Playbook) > 0 {
				fmt.Fprintf(a.stdout, "\nplaybook (%d bullets, ~%d tokens):\n", len(s.Playbook), s.PlaybookTokens())
				for _, line := range strings.Split(strings.TrimRight(s.RenderPlaybook(), "\n"), "\n") {
					fmt.Fprintln(a.stdout, "  "+line)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return c
}

func sortedParams(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

func (a *app) strategyValidateCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check strategy files; every problem positioned, exit 2 on any",
		Example: `  sextant strategy validate strategies/email-handler.toml
  sextant strategy validate strategies/*.toml --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			rows := []validated{}
			for _, f := range args {
				s, err := strategy.Load(f)
				if err != nil {
					errs = append(errs, err)
					v := validated{File: f, Problems: sdk.AsError(err).Problems}
					if len(v.Problems) == 0 {
						v.Problems = []sdk.Problem{{File: f, Message: err.Error()}}
					}
					rows = append(rows, v)
					continue
				}
				rows = append(rows, validated{File: f, OK: true, Name: s.Metadata.Name, Version: s.Metadata.Version, Hash: s.Hash()})
				if !asJSON {
					fmt.Fprintf(a.stdout, "%s: ok (%s %s, hash %s…)\n", f, s.Metadata.Name, s.Metadata.Version, s.Hash()[:12])
				}
			}
			if asJSON {
				if err := writeJSON(a.stdout, rows); err != nil {
					return err
				}
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

// validated is one file's entry in strategy validate --json.
type validated struct {
	File     string        `json:"file"`
	OK       bool          `json:"ok"`
	Name     string        `json:"name,omitempty"`
	Version  string        `json:"version,omitempty"`
	Hash     string        `json:"hash,omitempty"`
	Problems []sdk.Problem `json:"problems,omitempty"`
}

func (a *app) strategyDiffCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "diff BASE CANDIDATE",
		Short: "Show what changed from one strategy to another: parameters, constraints, playbook deltas",
		Example: `  sextant strategy diff strategies/email-handler.toml candidates/email-handler-2.1.0.toml
  sextant strategy diff a.toml b.toml --json`,
		Args: cobra.ExactArgs(2),
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
			if asJSON {
				return writeJSON(a.stdout, d.SDK())
			}
			if d.Empty() {
				fmt.Fprintf(a.stdout, "no behavioural change from %s to %s\n", d.From, d.To)
				return nil
			}
			fmt.Fprint(a.stdout, d.String())
			if !strings.HasSuffix(d.String(), "\n") {
				fmt.Fprintln(a.stdout)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return c
}

func (a *app) strategyLogCommand() *cobra.Command {
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "log NAME",
		Short: "List the promoted versions of a strategy recorded in the store",
		Example: `  sextant strategy log email-handler --store pipelines/email-triage/.sextant
  sextant strategy log email-handler --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			loc, err := a.locateTask(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), loc.dir, readStore)
			if err != nil {
				return err
			}
			defer s.Close()
			recs, err := s.StrategyLog(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				if recs == nil {
					recs = []store.StrategyRecord{}
				}
				return writeJSON(a.stdout, recs)
			}
			if len(recs) == 0 {
				fmt.Fprintf(a.stdout, "no promoted versions of %s recorded\n", args[0])
				return nil
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "VERSION\tPARENT\tHASH\tAUTHOR\tCREATED")
			for _, r := range recs {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Version, r.Parent, r.Hash[:min(12, len(r.Hash))], r.Author, r.Created.UTC().Format(time.RFC3339))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			return a.printLiveIn(cmd.Context(), s, args[0])
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, true)
	return c
}
