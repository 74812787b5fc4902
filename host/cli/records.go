package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
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
			var s *store.Store
			var filterErr error
			if minRewardFlag != "" {
				dim, lo, err := parseReward(minRewardFlag)
				if err != nil {
					return usageErr(fmt.Errorf("--min-reward: %w", err))
				}
				q.Match = func(t *store.Task) bool {
					ok, err := meanRewardAtLeast(cmd.Context(), s, t.ID, dim, lo)
					if err != nil && filterErr == nil {
						filterErr = err
					}
					return ok
				}
			}
			loc, err := a.locateTask(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			if s, err = a.openStore(cmd.Context(), loc.dir, readStore); err != nil {
				return err
			}
			defer s.Close()
			tasks, err := s.Tasks(cmd.Context(), q)
			if err == nil && filterErr != nil {
				return filterErr
			}
			// Past damage the list goes on; the error, which says
			// what was left out, comes after it (exit 1).
			damaged := err
			if err != nil && !errors.Is(err, store.ErrDamaged) {
				return err
			}
			if asJSON {
				if tasks == nil {
					tasks = []store.Task{}
				}
				if err := writeJSON(a.stdout, tasks); err != nil {
					return err
				}
				return damaged
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TASK\tSTATUS\tPIPELINE\tSTRATEGY\tCREATED\tTAGS\tWAITING FOR")
			for _, t := range tasks {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s", t.ID, t.Status, t.Pipeline, t.Strategy.Version,
					t.Created.UTC().Format(time.RFC3339), strings.Join(t.Tags, ","))
				if d := taskDetail(&t); d != "" { // no trailing blanks on the other lines
					fmt.Fprintf(w, "\t%s", d)
				}
				fmt.Fprintln(w)
			}
			if err := w.Flush(); err != nil {
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
			loc, err := a.locateTask(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), loc.dir, readStore)
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
				for _, h := range tree.Recordings {
					r, err := s.Recording(cmd.Context(), h)
					if err != nil {
						return fmt.Errorf("show %s: recording %s: %w", args[0], h, err)
					}
					calls = append(calls, r)
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
			printTree(a.stdout, tree, calls)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output (keys in lower case: task, executions, rewards, recordings)")
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().BoolVar(&full, "full", false, "also print every prompt, reply and human answer (with --json: a calls list of the recordings)")
	sf.add(c, true)
	return c
}

func printTree(w io.Writer, t *store.Tree, calls []*store.Recording) {
	byHash := map[string]*store.Recording{}
	humans := map[string][]*store.Recording{} // by step
	for _, r := range calls {
		byHash[r.Hash] = r
		if r.Kind == store.RecordHuman {
			var q struct{ Step string }
			if json.Unmarshal(r.Request, &q) == nil {
				humans[q.Step] = append(humans[q.Step], r)
			}
		}
	}
	fmt.Fprintf(w, "task %s  %s  pipeline %s  strategy %s %s\n", t.Task.ID, t.Task.Status, t.Task.Pipeline, t.Task.Strategy.Name, t.Task.Strategy.Version)
	if len(t.Task.Tags) > 0 {
		fmt.Fprintf(w, "tags: %s\n", strings.Join(t.Task.Tags, ", "))
	}
	for _, wt := range t.Task.Waits {
		fmt.Fprintf(w, "waiting for %s\n", wt)
	}
	printOperated(w, &t.Task)
	if len(t.Task.Input) > 0 {
		fmt.Fprintf(w, "input: %s\n", clip(string(t.Task.Input), 200))
	}
	if len(t.Task.Truth) > 0 {
		fmt.Fprintf(w, "truth: %s\n", clip(string(t.Task.Truth), 200))
	}
	for _, ex := range t.Executions {
		e := ex.Execution
		fmt.Fprintf(w, "\nexecution %s  %s  %s", e.ID, e.Mode, e.Status)
		if e.Error != "" {
			fmt.Fprintf(w, "  error: %s", e.Error)
		}
		fmt.Fprintln(w)
		children := map[string][]store.Span{}
		var roots []store.Span
		ids := map[string]bool{}
		for _, sp := range ex.Spans {
			ids[sp.SpanID] = true
		}
		for _, sp := range ex.Spans {
			if sp.ParentSpanID == "" || !ids[sp.ParentSpanID] {
				roots = append(roots, sp)
			} else {
				children[sp.ParentSpanID] = append(children[sp.ParentSpanID], sp)
			}
		}
		var walk func(sp store.Span, depth int)
		walk = func(sp store.Span, depth int) {
			fmt.Fprintf(w, "%s%-*s %8s%s\n", strings.Repeat("  ", depth+1), 36-2*depth, sp.Name, dur(sp), spanExtras(sp))
			if len(calls) > 0 {
				indent := strings.Repeat("  ", depth+3)
				if v, ok := sp.Attributes["sextant.recording"]; ok {
					// A tool call's person's decisions come before its result.
					for _, what := range []string{"confirm", "retry"} {
						if r := byHash[store.ToolApprovalKey(v.Str(), what)]; r != nil {
							printCall(w, indent, r)
						}
					}
					if r := byHash[v.Str()]; r != nil {
						printCall(w, indent, r)
					}
				} else if sp.Attributes[store.AttrGenAIOperationName].Str() == "execute_tool" {
					printRefusedCall(w, indent, sp)
				}
				if v, ok := sp.Attributes["sextant.node"]; ok && sp.Attributes["sextant.step.kind"].Str() == "human" {
					for _, r := range humans[v.Str()] {
						printCall(w, indent, r)
					}
				}
			}
			kids := children[sp.SpanID]
			sort.SliceStable(kids, func(i, j int) bool { return kids[i].Seq < kids[j].Seq })
			for _, k := range kids {
				walk(k, depth+1)
			}
		}
		for _, r := range roots {
			walk(r, 0)
		}
	}
	printToolRecords(w, calls, byHash)
	if len(t.Rewards) > 0 {
		fmt.Fprintln(w, "\nrewards:")
		for _, r := range t.Rewards {
			target := ""
			if r.SpanID != "" {
				target = " span " + r.SpanID
			}
			fmt.Fprintf(w, "  #%d %+g%s %s %s\n", r.Seq, r.Value, target, strings.Join(r.Tags, ","), r.Note)
		}
	}
}

// printToolRecords prints the tool recordings no span points at: the
// tools each source listed for the task, and calls that started and have
// no result (the run stopped during them).
func printToolRecords(w io.Writer, calls []*store.Recording, byHash map[string]*store.Recording) {
	var rest []*store.Recording
	for _, r := range calls {
		switch r.Kind {
		case store.RecordToolList:
			rest = append(rest, r)
		case store.RecordToolStarted:
			var m struct{ Call string }
			if json.Unmarshal(r.Response, &m) != nil || byHash[m.Call] == nil {
				rest = append(rest, r)
			}
		}
	}
	if len(rest) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntool recordings:")
	for _, r := range rest {
		printCall(w, "  ", r)
	}
}

// printRefusedCall prints a tool call no tool ran for (not offered, bad
// arguments, blocked by policy), from its span.
func printRefusedCall(w io.Writer, indent string, sp store.Span) {
	block := blockPrinter(w, indent)
	name := sp.Attributes[run.AttrGenAIToolName].Str()
	if src := sp.Attributes["sextant.tool.source"].Str(); src != "" {
		name = src + "." + name
	}
	block("tool", fmt.Sprintf("%s(%s)", name, sp.Attributes[run.AttrGenAIToolCallArguments].Str()))
	block("error", strings.TrimPrefix(sp.Attributes[run.AttrGenAIToolCallResult].Str(), "error: "))
}

// blockPrinter returns a printer of labelled, indented text blocks.
func blockPrinter(w io.Writer, indent string) func(label, text string) {
	return func(label, text string) {
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		fmt.Fprintf(w, "%s%s: %s\n", indent, label, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%*s  %s\n", indent, len(label), "", l)
		}
	}
}

// toolCall is a call as show prints it: source.tool(arguments), with its
// occurrence when the task made the same call before.
func toolCall(q store.ToolRequest) string {
	s := fmt.Sprintf("%s.%s(%s)", q.Source, q.Tool, q.Arguments)
	if q.N > 1 {
		s += fmt.Sprintf(" #%d", q.N)
	}
	return s
}

// printCall prints what a recording holds: a chat's messages and reply
// (with the tool calls the model made), the question put to a person and
// the answer, or a tool call, its started marker or a source's tool list.
func printCall(w io.Writer, indent string, r *store.Recording) {
	block := blockPrinter(w, indent)
	switch r.Kind {
	case store.RecordHuman:
		var q struct{ Prompt string }
		_ = json.Unmarshal(r.Request, &q)
		block("asked", q.Prompt)
		block("answer", string(r.Response))
	case store.RecordTool:
		var q store.ToolRequest
		var res sdk.ToolResult
		if json.Unmarshal(r.Request, &q) != nil || json.Unmarshal(r.Response, &res) != nil {
			block("request", string(r.Request))
			block("response", string(r.Response))
			return
		}
		block("tool", toolCall(q))
		label := "result"
		if res.IsError {
			label = "error"
		}
		block(label, res.Content)
		if len(res.Structured) > 0 {
			block("structured", string(res.Structured))
		}
	case store.RecordToolStarted:
		var q store.ToolRequest
		_ = json.Unmarshal(r.Request, &q)
		block("started", toolCall(q)+" — no result was recorded: the run stopped during the call")
	case store.RecordToolList:
		var q struct{ Source string }
		var specs []sdk.ToolSpec
		_ = json.Unmarshal(r.Request, &q)
		_ = json.Unmarshal(r.Response, &specs)
		names := make([]string, len(specs))
		for i, sp := range specs {
			names[i] = sp.Name
		}
		block("tools of "+q.Source, strings.Join(names, ", "))
	default:
		var req sdk.ChatRequest
		var resp sdk.ChatResponse
		if json.Unmarshal(r.Request, &req) != nil || json.Unmarshal(r.Response, &resp) != nil {
			block("request", string(r.Request))
			block("response", string(r.Response))
			return
		}
		for _, m := range req.Messages {
			if m.Content != "" || len(m.ToolCalls) == 0 {
				block(m.Role, m.Content)
			}
			for _, c := range m.ToolCalls {
				block(m.Role+" calls", fmt.Sprintf("%s(%s)", c.Name, c.Arguments))
			}
		}
		if resp.Text != "" || len(resp.ToolCalls) == 0 {
			block("reply", resp.Text)
		}
		for _, c := range resp.ToolCalls {
			block("calls", fmt.Sprintf("%s(%s)", c.Name, c.Arguments))
		}
	}
}

func dur(sp store.Span) string {
	if sp.End.IsZero() {
		return "…"
	}
	return sp.End.Sub(sp.Start).Round(time.Microsecond).String()
}

func spanExtras(sp store.Span) string {
	var parts []string
	if v, ok := sp.Attributes[store.AttrGenAIUsageInputTokens]; ok {
		parts = append(parts, fmt.Sprintf("in %d", v.Int()))
	}
	if v, ok := sp.Attributes[store.AttrGenAIUsageOutputTokens]; ok {
		parts = append(parts, fmt.Sprintf("out %d", v.Int()))
	}
	if v, ok := sp.Attributes["sextant.cost_usd"]; ok {
		parts = append(parts, fmt.Sprintf("$%.4f", v.Float()))
	}
	if v, ok := sp.Attributes["sextant.recorded"]; ok && v.Bool() {
		parts = append(parts, "recorded")
	}
	parts = append(parts, "span "+sp.SpanID)
	if sp.Status.Code == store.CodeError {
		parts = append(parts, "ERROR: "+sp.Status.Message)
	}
	return "  " + strings.Join(parts, "  ")
}

// clip shortens s to n runes, marking the cut with "…".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

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
			loc, err := a.locateTask(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), loc.dir, readStore)
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

// waitsSummary is the first thing a task waits for, and how many more.
func waitsSummary(ws []store.Wait) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0].String()
	}
	return fmt.Sprintf("%s (+%d more)", ws[0], len(ws)-1)
}
