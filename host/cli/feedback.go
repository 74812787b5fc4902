package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
)

func (a *app) feedbackCommand() *cobra.Command {
	var span, note string
	var asJSON bool
	var tags, rewards []string
	var sf storeFlags
	c := &cobra.Command{
		Use:     "feedback TASK --reward [NAME=]X",
		Short:   "Attach a reward to a task or one of its spans",
		Long:    help("feedback"),
		Example: help("feedback.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := store.NewRewards(args[0], span, rewards, tags, note)
			if err != nil {
				return usageErr(fmt.Errorf("--reward: %w", err))
			}
			return a.feedback(cmd.Context(), &sf, rs, asJSON)
		},
	}
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().StringArrayVar(&rewards, "reward", nil, "reward from -1 (bad) to 1 (good), optionally on a named dimension (safety=1; repeatable); a task succeeds when its unnamed rewards' mean is above 0 (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	c.Flags().StringVar(&span, "span", "", "span id the reward is about")
	c.Flags().StringArrayVar(&tags, "tag", nil, "tag (repeatable)")
	c.Flags().StringVar(&note, "note", "", "free text")
	sf.add(c, true)
	_ = c.MarkFlagRequired("reward")
	return c
}

// feedback records rs; an online pipeline named by --pipeline learns from
// them when this process holds the store.
func (a *app) feedback(ctx context.Context, sf *storeFlags, rs []*store.Reward, asJSON bool) error {
	b, _, err := a.openTasks(ctx, sf, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	if rs, err = b.Feedback(ctx, layer.FeedbackRequest{Rewards: rs, Pipeline: sf.pipeline}); err != nil {
		return err
	}
	if sf.pipeline != "" && b.Kind() != layer.Local {
		// Through a server: the reward is kept, but online learning
		// writes strategies and needs the store to itself.
		if p, err := pipeline.Load(ctx, sf.pipeline, nil, pipeline.Options{}); err == nil && p.Evolve.Online {
			fmt.Fprintf(a.stderr, "note: the reward went through sextant serve, which holds the store; online learning did not run (it needs the store to itself)\n")
		}
	}
	if asJSON {
		if len(rs) == 1 {
			return writeJSON(a.stdout, rs[0])
		}
		return writeJSON(a.stdout, rs)
	}
	report.WriteRewards(a.stdout, rs)
	return nil
}

func (a *app) importCommand() *cobra.Command {
	var sf storeFlags
	var asJSON bool
	c := &cobra.Command{
		Use:     "import FILE",
		Short:   "Read a JSONL export into the store (all or nothing)",
		Example: help("import.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r io.Reader = a.stdin
			name := "stdin"
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return withInvalid(err)
				}
				defer f.Close()
				r, name = f, args[0]
			}
			return a.importTasks(cmd.Context(), &sf, name, r, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, false)
	return c
}

// importTasks reads the export r (named name) into the store rules 1–3
// name, else ./.sextant.
func (a *app) importTasks(ctx context.Context, sf *storeFlags, name string, r io.Reader, asJSON bool) error {
	loc, ok, err := sf.common()
	if err != nil {
		return err
	}
	if !ok {
		loc = project.StoreLoc{Dir: project.DefaultStore, From: project.FromCwd}
	}
	b, err := a.open(ctx, layer.Target{Store: loc.Dir, Create: true})
	if err != nil {
		return err
	}
	defer b.Close()
	n, err := b.Import(ctx, name, r)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, map[string]int{"tasks": n.Tasks, "executions": n.Executions, "spans": n.Spans,
			"rewards": n.Rewards, "recordings": n.Recordings, "checkpoints": n.Checkpoints})
	}
	report.WriteImported(a.stdout, n)
	return nil
}
