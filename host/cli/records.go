package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
)

func (a *app) runsCommand() *cobra.Command {
	var pipe, status, tag, rewardTag, minRewardFlag string
	var limit int
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:     "runs",
		Short:   "List recorded tasks, newest first",
		Example: help("runs.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := query(pipe, status, tag, limit)
			if err != nil {
				return err
			}
			q.RewardTag = rewardTag
			bound, err := store.ParseRewardBound(minRewardFlag)
			if err != nil {
				return usageErr(fmt.Errorf("--min-reward: %w", err))
			}
			return a.listRuns(cmd.Context(), &sf, q, bound, asJSON)
		},
	}
	c.Flags().StringVar(&pipe, "pipeline", "", "only tasks of this pipeline (by name)")
	c.Flags().StringVar(&status, "status", "", "only tasks in this status (running, waiting, completed, failed, cancelled, incident, interrupted)")
	c.Flags().StringVar(&tag, "tag", "", "only tasks with this tag")
	c.Flags().StringVar(&rewardTag, "reward-tag", "", "only tasks with a reward tagged so (sextant feedback --tag)")
	c.Flags().StringVar(&minRewardFlag, "min-reward", "", "only tasks whose mean reward is at least X; NAME=X for a named dimension")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many tasks")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, false)
	return c
}

// listRuns prints the tasks of q within bound. Past damage the list goes
// on; the error, which says what was left out, comes after it (exit 1).
func (a *app) listRuns(ctx context.Context, sf *storeFlags, q store.Query, bound *store.RewardBound, asJSON bool) error {
	s, _, err := a.readTaskStore(ctx, sf)
	if err != nil {
		return err
	}
	defer s.Close()
	tasks, damaged := s.TasksRewarded(ctx, q, bound)
	if damaged != nil && !errors.Is(damaged, store.ErrDamaged) {
		return damaged
	}
	if tasks == nil {
		tasks = []store.Task{} // [] in JSON
	}
	if err := a.emit(asJSON, tasks, func(w io.Writer) error { return report.WriteTasks(w, tasks, report.TaskDetail) }); err != nil {
		return err
	}
	return damaged
}

func query(pipe, status, tag string, limit int) (store.Query, error) {
	q := store.Query{Pipeline: pipe, Tag: tag, Limit: limit}
	if status != "" {
		st, err := store.ParseStatus(status)
		if err != nil {
			return q, usageErr(fmt.Errorf("--status: %w", err))
		}
		q.Status = st
	}
	if limit < 0 {
		return q, usageErr(errors.New("--limit: must not be negative"))
	}
	return q, nil
}

func (a *app) showCommand() *cobra.Command {
	var asJSON, withCalls bool
	var sf storeFlags
	c := &cobra.Command{
		Use:     "show TASK",
		Short:   "Show a task: its executions as span trees with timings, tokens and cost",
		Example: help("show.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := a.readTaskStore(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			defer s.Close()
			tree, err := s.Tree(cmd.Context(), args[0])
			if err != nil {
				return notFound(err)
			}
			if !withCalls {
				return a.emit(asJSON, tree, treeText(tree, nil))
			}
			calls, err := s.TreeRecordings(cmd.Context(), tree)
			if err != nil {
				return err
			}
			return a.emit(asJSON, store.TreeCalls{Tree: tree, Calls: calls}, treeText(tree, calls))
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output (keys in lower case: task, executions, rewards, recordings)")
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().BoolVar(&withCalls, "full", false, "also print every prompt, reply and human answer (with --json: a calls list of the recordings)")
	sf.add(c, true)
	return c
}

// treeText writes a task's tree as show prints it, with the calls its
// runs made when --full read them.
func treeText(tree *store.Tree, calls []*store.Recording) func(io.Writer) error {
	return func(w io.Writer) error {
		report.WriteTree(w, tree, report.TreeOptions{Calls: calls, Operated: report.WriteOperated})
		return nil
	}
}

// readTaskStore opens for reading the store the command's flags name, or
// the one found from here, and says where it is.
func (a *app) readTaskStore(ctx context.Context, sf *storeFlags) (*store.Store, project.StoreLoc, error) {
	loc, err := a.locateTask(ctx, sf)
	if err != nil {
		return nil, project.StoreLoc{}, err
	}
	s, err := a.openStore(ctx, loc.Dir, readStore)
	return s, loc, err
}

func (a *app) exportCommand() *cobra.Command {
	var format, pipe, status, tag string
	var limit int
	var checkpoints, legacy bool
	var sf storeFlags
	c := &cobra.Command{
		Use:     "export",
		Short:   "Write tasks, executions, spans, rewards and recordings as JSONL or OTLP JSON",
		Long:    help("export"),
		Example: help("export.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := query(pipe, status, tag, limit)
			if err != nil {
				return err
			}
			if err := store.CheckExportFormat(format); err != nil {
				return usageErr(fmt.Errorf("--format: %w", err))
			}
			s, _, err := a.readTaskStore(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			defer s.Close()
			n, err := s.ExportAs(cmd.Context(), a.stdout, store.ExportRequest{Format: format, Query: q, Checkpoints: checkpoints, LegacyGenAISystem: legacy})
			if err == nil && n != nil {
				a.logger.Info("exported", "tasks", n.Tasks, "executions", n.Executions, "spans", n.Spans, "rewards", n.Rewards, "recordings", n.Recordings)
			}
			return err
		},
	}
	c.Flags().StringVar(&format, "format", "jsonl", "jsonl or otlp")
	c.Flags().StringVar(&pipe, "pipeline", "", "only tasks of this pipeline")
	c.Flags().StringVar(&status, "status", "", "only tasks in this status")
	c.Flags().StringVar(&tag, "tag", "", "only tasks with this tag")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many tasks")
	c.Flags().BoolVar(&checkpoints, "checkpoints", false, "include checkpoints (a backup of paused runs)")
	c.Flags().BoolVar(&legacy, "legacy-genai-system", false, "otlp: also write the deprecated gen_ai.system attribute")
	sf.add(c, false)
	return c
}
