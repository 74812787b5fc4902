package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

func (a *app) runsCommand() *cobra.Command {
	var pipe, status, tag, rewardTag, minRewardFlag string
	var limit int
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "runs",
		Short: "List recorded tasks, newest first",
		Example: `  sextant runs --store pipelines/email-triage/.sextant
  sextant runs --status waiting --tag smoke --limit 20 --json
  sextant runs --reward-tag wrong-tone
  sextant runs --min-reward safety=0.5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := query(pipe, status, tag, limit)
			if err != nil {
				return err
			}
			q.RewardTag = rewardTag
			rf := &rewardFilter{ctx: cmd.Context()}
			if minRewardFlag != "" {
				if rf.dim, rf.lo, err = parseReward(minRewardFlag); err != nil {
					return usageErr(fmt.Errorf("--min-reward: %w", err))
				}
				q.Match = rf.match
			}
			if rf.s, err = a.readTaskStore(cmd.Context(), &sf); err != nil {
				return err
			}
			defer rf.s.Close()
			tasks, err := rf.s.Tasks(cmd.Context(), q)
			if err == nil && rf.err != nil {
				return rf.err
			}
			// Past damage the list goes on; the error, which says
			// what was left out, comes after it (exit 1).
			damaged := err
			if err != nil && !errors.Is(err, store.ErrDamaged) {
				return err
			}
			if tasks == nil {
				tasks = []store.Task{} // [] in JSON
			}
			if err := a.emit(asJSON, tasks, func(w io.Writer) error { return report.WriteTasks(w, tasks, taskDetail) }); err != nil {
				return err
			}
			return damaged
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

// rewardFilter keeps the tasks whose mean reward on dim is at least lo
// (runs --min-reward); err is the first store error it met.
type rewardFilter struct {
	ctx context.Context
	s   *store.Store
	dim string
	lo  float64
	err error
}

func (f *rewardFilter) match(t *store.Task) bool {
	ok, err := meanRewardAtLeast(f.ctx, f.s, t.ID, f.dim, f.lo)
	if err != nil && f.err == nil {
		f.err = err
	}
	return ok
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
	var asJSON, full bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "show TASK",
		Short: "Show a task: its executions as span trees with timings, tokens and cost",
		Example: `  sextant show 01JD3K…
  sextant show 01JD3K… --json --store pipelines/email-triage/.sextant`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.readTaskStore(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			defer s.Close()
			tree, err := s.Tree(cmd.Context(), args[0])
			if err != nil {
				return notFound(err)
			}
			var calls []*store.Recording
			if full {
				if calls, err = treeCalls(cmd.Context(), s, tree); err != nil {
					return err
				}
			}
			if asJSON {
				if full {
					return writeJSON(a.stdout, struct {
						*store.Tree
						Calls []*store.Recording `json:"calls"`
					}{tree, calls})
				}
				return writeJSON(a.stdout, tree)
			}
			report.WriteTree(a.stdout, tree, report.TreeOptions{Calls: calls, Operated: printOperated})
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output (keys in lower case: task, executions, rewards, recordings)")
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().BoolVar(&full, "full", false, "also print every prompt, reply and human answer (with --json: a calls list of the recordings)")
	sf.add(c, true)
	return c
}

// treeCalls reads the recordings a task's runs made or used.
func treeCalls(ctx context.Context, s *store.Store, tree *store.Tree) ([]*store.Recording, error) {
	var calls []*store.Recording
	for _, h := range tree.Recordings {
		r, err := s.Recording(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("show %s: recording %s: %w", tree.Task.ID, h, err)
		}
		calls = append(calls, r)
	}
	return calls, nil
}

// readTaskStore opens for reading the store the command's flags name, or
// the one found from here.
func (a *app) readTaskStore(ctx context.Context, sf *storeFlags) (*store.Store, error) {
	loc, err := a.locateTask(ctx, sf)
	if err != nil {
		return nil, err
	}
	return a.openStore(ctx, loc.dir, readStore)
}

// clip shortens s to n runes, marking the cut with "…".
func clip(s string, n int) string { return report.Clip(s, n) }

func (a *app) exportCommand() *cobra.Command {
	var format, pipe, status, tag string
	var limit int
	var checkpoints, legacy bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "export",
		Short: "Write tasks, executions, spans, rewards and recordings as JSONL or OTLP JSON",
		Long: `export writes the store to stdout: JSONL (one record per line; sextant import
reads it back exactly — how a dataset moves into a repo and into CI), or OTLP
JSON for Jaeger, Tempo and other OpenTelemetry backends, with the GenAI
attribute names on LLM spans. Cancelled tasks are left out unless --status
cancelled asks for them.`,
		Example: `  sextant export > dataset.jsonl
  sextant export --format otlp --pipeline email-triage > traces.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := query(pipe, status, tag, limit)
			if err != nil {
				return err
			}
			if q.Status == "" {
				q.Match = notCancelled // a cancelled run is no example to learn from
			}
			if format != "jsonl" && format != "otlp" {
				return usageErr(fmt.Errorf("--format: %q is not jsonl or otlp", format))
			}
			s, err := a.readTaskStore(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			defer s.Close()
			if format == "otlp" {
				_, err = s.ExportOTLP(cmd.Context(), a.stdout, store.OTLPOptions{Query: q, LegacyGenAISystem: legacy})
				return err
			}
			n, err := s.Export(cmd.Context(), a.stdout, store.ExportOptions{Query: q, Checkpoints: checkpoints})
			if err != nil {
				return err
			}
			a.logger.Info("exported", "tasks", n.Tasks, "executions", n.Executions, "spans", n.Spans, "rewards", n.Rewards, "recordings", n.Recordings)
			return nil
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

// waitsSummary is the first thing a task waits for, and how many more.
func waitsSummary(ws []store.Wait) string { return report.WaitsSummary(ws) }

// The range of a reward: replay counts a task with rewards as a success
// when their mean is above 0, and reports the mean as its reward metric.
const (
	minReward = -1.0
	maxReward = 1.0
)

func (a *app) feedbackCommand() *cobra.Command {
	var span, note string
	var asJSON bool
	var tags, rewards []string
	var sf storeFlags
	c := &cobra.Command{
		Use:   "feedback TASK --reward [NAME=]X",
		Short: "Attach a reward to a task or one of its spans",
		Long: `feedback records a reward on a task (or one span of it). A task succeeds in
replay when its rewards' mean is above 0 (unless [score] decides).

With --pipeline naming an online pipeline ([evolve] online = true, an
experimental strategy), the feedback is also a learning step: the playbook
bullets the task's run cited are counted helpful (reward > 0), harmful (< 0)
or neutral (0), and — when the pipeline has no [score] success, so its runs
could not learn when they ended — the run's curator delta ([evolve] delta) is
applied; the result is recorded as the next strategy version, which the next
run uses.

A reward may name a dimension (--reward safety=1): each is kept, listed
(sextant runs --min-reward safety=0.5), charted (/api/v1/metrics) and
gated on (metric = "reward.safety") on its own; the unnamed one is the one
success is decided by. Several --reward flags are stored together or not
at all.`,
		Example: `  sextant feedback 01JD3K… --reward 1 --tag correct
  sextant feedback 01JD3K… --reward helpfulness=0.8 --reward safety=1
  sextant feedback 01JD3K… --span 3f2a9c0d1b2e4f56 --reward -0.5 --note "wrong tone"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rs []*store.Reward
			seen := map[string]bool{}
			for _, reward := range rewards {
				dim, v, err := parseReward(reward)
				if err != nil {
					return usageErr(fmt.Errorf("--reward: %w", err))
				}
				if seen[dim] {
					return usageErr(fmt.Errorf("--reward: dimension %q given twice", dim))
				}
				seen[dim] = true
				rs = append(rs, &store.Reward{Task: args[0], SpanID: span, Dimension: dim, Value: v, Tags: tags, Note: note})
			}
			loc, err := a.locateTask(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), loc.dir, updateStore)
			if err != nil {
				srv, verr := serve.ViaServer(loc.dir, err)
				if verr != nil {
					return verr
				}
				if rs, err = srv.AddRewards(cmd.Context(), rs); err != nil {
					return apiErr(err)
				}
			} else {
				defer s.Close()
				if err := s.AddRewards(cmd.Context(), rs); err != nil {
					return withInvalid(err) // an unknown task, execution or span
				}
			}
			v, learn := 0.0, false
			for _, r := range rs {
				if r.Dimension == "" {
					v, learn = r.Value, true
				}
			}
			if sf.pipeline != "" && s == nil {
				// Through a server: the reward is kept, but online learning
				// writes strategies and needs the store to itself.
				if p, err := pipeline.Load(cmd.Context(), sf.pipeline, nil, pipeline.Options{}); err == nil && p.Evolve.Online {
					fmt.Fprintf(a.stderr, "note: the reward went through sextant serve, which holds the store; online learning did not run (it needs the store to itself)\n")
				}
			} else if sf.pipeline != "" && learn {
				// An online pipeline learns from the feedback (its unnamed
				// dimension) at once.
				if err := a.learnFromFeedback(cmd.Context(), s, sf.pipeline, args[0], v); err != nil {
					return err
				}
			}
			if asJSON {
				if len(rs) == 1 {
					return writeJSON(a.stdout, rs[0])
				}
				return writeJSON(a.stdout, rs)
			}
			for _, r := range rs {
				if r.Dimension != "" {
					fmt.Fprintf(a.stdout, "reward #%d %s %+g on task %s\n", r.Seq, r.Dimension, r.Value, r.Task)
					continue
				}
				fmt.Fprintf(a.stdout, "reward #%d %+g on task %s\n", r.Seq, r.Value, r.Task)
			}
			return nil
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

// meanRewardAtLeast reports whether the task's mean reward on dimension
// dim ("" the unnamed one) is at least lo; a task without such rewards
// is not.
func meanRewardAtLeast(ctx context.Context, s *store.Store, task, dim string, lo float64) (bool, error) {
	if dim == "" {
		n, sum, err := s.RewardStats(ctx, task)
		return err == nil && n > 0 && sum/float64(n) >= lo, err
	}
	dims, err := s.DimensionStats(ctx, task)
	if err != nil {
		return false, err
	}
	d, ok := dims[dim]
	return ok && d.Mean() >= lo, nil
}

// parseReward reads a --reward value: X, or NAME=X for a named dimension.
func parseReward(s string) (dim string, v float64, err error) {
	num := s
	if name, val, ok := strings.Cut(s, "="); ok {
		if err := store.ValidDimension(name); err != nil {
			return "", 0, err
		}
		dim, num = name, val
	}
	v, err = strconv.ParseFloat(num, 64)
	if err != nil || num == "" || math.IsNaN(v) {
		return "", 0, fmt.Errorf("%q is not a number", s)
	}
	if v < minReward || v > maxReward {
		return "", 0, fmt.Errorf("%s is out of range: want %g (bad) to %g (good)", s, minReward, maxReward)
	}
	return dim, v, nil
}

func (a *app) importCommand() *cobra.Command {
	var sf storeFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "import FILE",
		Short: "Read a JSONL export into the store (all or nothing)",
		Example: `  sextant import dataset.jsonl
  sextant import - < dataset.jsonl --store ci/.sextant`,
		Args: cobra.ExactArgs(1),
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
			loc, ok, err := sf.common()
			if err != nil {
				return err
			}
			if !ok {
				loc = storeLoc{".sextant", fromCwd}
			}
			dir := loc.dir
			_, statErr := os.Stat(dir)
			fresh := errors.Is(statErr, os.ErrNotExist)
			var n store.Counts
			s, err := a.openStore(cmd.Context(), dir, createStore)
			if err != nil {
				// While sextant serve holds the store, import through it.
				srv, verr := serve.ViaServer(dir, err)
				if verr != nil {
					return verr
				}
				got, err := srv.Import(cmd.Context(), name, r)
				if err != nil {
					err = fmt.Errorf("import %s through sextant serve at %s: %w", name, srv.URL(), err)
					if errors.Is(err, store.ErrExists) {
						return withInvalid(err) // as a local import of tasks the store has
					}
					return apiErr(err)
				}
				n = store.Counts{Tasks: got.Tasks, Executions: got.Executions, Spans: got.Spans, Rewards: got.Rewards, Recordings: got.Recordings, Checkpoints: got.Checkpoints}
			} else {
				n, err = s.Import(cmd.Context(), r, name)
				s.Close()
				if err != nil {
					if fresh {
						os.RemoveAll(dir) // leave no empty store behind a failed import
					}
					return withInvalid(err)
				}
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]int{"tasks": n.Tasks, "executions": n.Executions, "spans": n.Spans,
					"rewards": n.Rewards, "recordings": n.Recordings, "checkpoints": n.Checkpoints})
			}
			fmt.Fprintf(a.stdout, "imported %d tasks, %d executions, %d spans, %d rewards, %d recordings, %d checkpoints\n",
				n.Tasks, n.Executions, n.Spans, n.Rewards, n.Recordings, n.Checkpoints)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, false)
	return c
}
