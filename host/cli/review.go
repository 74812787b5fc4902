package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/report"
)

func (a *app) reviewCommand() *cobra.Command {
	var sf storeFlags
	c := &cobra.Command{
		Use:     "review",
		Short:   "List, show, approve or reject candidates waiting for a person",
		Example: help("review.example"),
	}
	c.PersistentFlags().StringVar(&sf.dir, "store", "", storeHelp)
	c.PersistentFlags().StringVar(&sf.pipeline, "pipeline", "", "pipeline whose store holds the reviews")
	sf.pipelineFlag = true
	c.AddCommand(a.reviewListCommand(&sf), a.reviewShowCommand(&sf))
	c.AddCommand(a.reviewDecideCommands(&sf)...)
	return c
}

func (a *app) reviewListCommand(sf *storeFlags) *cobra.Command {
	var status string
	var asJSON bool
	c := &cobra.Command{
		Use:     "list",
		Short:   "List review requests (pending by default)",
		Example: "  sextant review list --status all --store pipelines/email-triage/.sextant",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var want evolve.ReviewStatus
			if status != "all" {
				want = evolve.ReviewStatus(status)
			}
			return a.listReviews(cmd.Context(), sf, want, asJSON)
		},
	}
	c.Flags().StringVar(&status, "status", "pending", "pending, approved, rejected, superseded or all")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return c
}

// listReviews lists the review requests in status want ("": all).
func (a *app) listReviews(ctx context.Context, sf *storeFlags, want evolve.ReviewStatus, asJSON bool) error {
	st, _, err := a.readTaskStore(ctx, sf)
	if err != nil {
		return err
	}
	defer st.Close()
	rs, err := evolve.ListReviews(ctx, st, want)
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []evolve.ReviewRequest{} // [] in JSON
	}
	return a.emit(asJSON, rs, func(w io.Writer) error { return evolve.WriteReviews(w, rs) })
}

func (a *app) reviewShowCommand(sf *storeFlags) *cobra.Command {
	var candidate bool
	c := &cobra.Command{
		Use:     "show ID",
		Short:   "Show a review request: the candidate, its evidence and verdicts",
		Example: "  sextant review show 4b2e979dbf70",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, _, err := a.readTaskStore(cmd.Context(), sf)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := evolve.GetReview(cmd.Context(), st, args[0])
			if err != nil {
				return notFound(err)
			}
			if candidate {
				_, err := fmt.Fprint(report.TermSafeOn(a.stdout, isTerminal(a.stdout)), r.Candidate) // a file gets its bytes
				return err
			}
			return writeJSON(a.stdout, r)
		},
	}
	c.Flags().BoolVar(&candidate, "candidate", false, "print only the candidate strategy (TOML), e.g. to gate it again")
	return c
}

// reviewDecideCommands are review approve and review reject.
func (a *app) reviewDecideCommands(sf *storeFlags) []*cobra.Command {
	var by, note, dir string
	decide := func(approve bool) func(cmd *cobra.Command, args []string) error {
		return func(cmd *cobra.Command, args []string) error {
			req := layer.DecideRequest{ID: args[0], Approve: approve, By: by, Note: note, Dir: dir, Now: time.Now().UTC().Truncate(time.Second)}
			return a.decide(cmd.Context(), sf, req)
		}
	}
	approve := &cobra.Command{Use: "approve ID", Short: "Approve and promote a candidate", Args: cobra.ExactArgs(1),
		Example: "  sextant review approve 4b2e979dbf70 --by ana --pipeline pipelines/email-triage/pipeline.toml", RunE: decide(true)}
	reject := &cobra.Command{Use: "reject ID", Short: "Reject a candidate", Args: cobra.ExactArgs(1),
		Example: "  sextant review reject 4b2e979dbf70 --by ana --note \"too aggressive\"", RunE: decide(false)}
	for _, sub := range []*cobra.Command{approve, reject} {
		sub.Flags().StringVar(&by, "by", "", "who decides")
		sub.Flags().StringVar(&note, "note", "", "why")
	}
	approve.Flags().StringVar(&dir, "dir", "", "directory for the promoted strategy file (default: beside the pipeline's strategy)")
	return []*cobra.Command{approve, reject}
}

// decide approves or rejects a review request (layer.DecideOn).
func (a *app) decide(ctx context.Context, sf *storeFlags, req layer.DecideRequest) error {
	if req.Approve && sf.pipeline != "" {
		p, err := pipeline.Load(ctx, sf.pipeline, nil, pipeline.Options{})
		if err != nil {
			return fmt.Errorf("--pipeline: %w", err)
		}
		req.Pipeline = p
	}
	b, _, err := a.openTasks(ctx, sf, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	return layer.DecideOn(ctx, a.stdout, b, req)
}
