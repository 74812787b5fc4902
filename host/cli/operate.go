package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// What an operator does to runs, as Temporal's and Camunda's users do:
// cancel one. The process that holds the store does it: this one when it
// can open the store, else the holder — a sextant run (or resume) over the
// store's socket, which serves cancelOp while its run goes on, or a
// sextant serve through its API.

// cancelOp is the request kind on the store's socket.
const cancelOp = "cancel"

// cancelRequest asks the holder of the store to cancel a task.
type cancelRequest struct {
	Task   string `json:"task"`
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

func (a *app) cancelCommand() *cobra.Command {
	var reason string
	var asJSON bool
	var sf storeFlags
	var tf temporalFlags
	c := &cobra.Command{
		Use:   "cancel TASK",
		Short: "Cancel a run: a running one stops, a waiting one ends",
		Long: `cancel ends a task for good, in status cancelled, recording who cancelled it
(user@host) and why (--reason).

A run in progress stops: its steps see their context end, and a provider or
tool call in flight is abandoned and not recorded; what the run handed over
before stays in its record. A task that no process runs (waiting, in an
incident, interrupted) ends at once. When another process holds the store
(a sextant run, run --wait or resume, or a sextant serve), the cancel goes
to it, over the store's socket or through the server's API. With --temporal,
the run is one on Temporal (sextant run --temporal): its workflow is
cancelled, a step in flight stops at its next heartbeat, and the workers
record the task cancelled.

Cancelled tasks are never replayed (only completed ones are) and sextant
export leaves them out unless asked for with --status cancelled.

A task that has already ended is an error (exit 2), and so is a task that
another operator cancels at the same moment: one of the two wins.`,
		Example: `  sextant cancel 01JD3K… --reason "customer withdrew the request"
  sextant cancel 01JD3K… --store pipelines/email-triage/.sextant --json
  sextant cancel 01JD3K… --temporal localhost:7233 --reason "duplicate"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			task := args[0]
			req := cancelRequest{Task: task, By: store.Operator(), Reason: reason}
			if tf.addr != "" {
				res, err := a.cancelOnTemporal(ctx, tf, req)
				if err != nil {
					return err
				}
				return a.reportCancel(res, asJSON)
			}
			loc, err := a.locateTask(ctx, &sf)
			if err != nil {
				return err
			}
			s, err := a.openStore(ctx, loc.dir, updateStore)
			if err != nil {
				res, err := a.cancelHeld(ctx, loc, req, err)
				if err != nil {
					return err
				}
				return a.reportCancel(res, asJSON)
			}
			defer s.Close()
			res, err := run.Cancel(ctx, s, task, &run.Cancelled{By: req.By, Reason: reason})
			if err != nil {
				return notFound(err)
			}
			return a.reportCancel(res, asJSON)
		},
	}
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().StringVar(&reason, "reason", "", "why the task is cancelled (recorded with it)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, true)
	tf.add(c, false)
	return c
}

// cancelHeld asks the process holding the store to cancel: a run over
// the store's socket, a serve through its API; any other holder leaves
// the lock error.
func (a *app) cancelHeld(ctx context.Context, loc storeLoc, req cancelRequest, locked error) (*run.Result, error) {
	var res run.Result
	err := store.Ask(ctx, loc.dir, cancelOp, req, &res)
	switch {
	case errors.Is(err, store.ErrNotServed):
		srv, err := serve.ViaServer(loc.dir, locked)
		if err != nil {
			return nil, err
		}
		r, err := srv.Cancel(ctx, req.Task, req.By, req.Reason)
		if err != nil {
			return nil, operateAPIErr(fmt.Errorf("cancel through sextant serve at %s: %w", srv.URL(), err))
		}
		return r, nil
	case errors.Is(err, store.ErrInvalid):
		return nil, withInvalid(err)
	case err != nil:
		return nil, fmt.Errorf("cancel through the process holding the store: %w", err)
	}
	return &res, nil
}

// operateAPIErr is an API's refusal of an operator's change: an unknown
// task, bad input or a conflict (409: the task ended, or another operator
// acted first) exit 2.
func operateAPIErr(err error) error {
	var ae *serve.APIError
	if errors.As(err, &ae) && ae.Status == 409 {
		return withInvalid(err)
	}
	return apiErr(err)
}

func (a *app) reportCancel(res *run.Result, asJSON bool) error {
	if asJSON {
		return writeJSON(a.stdout, res)
	}
	fmt.Fprintf(a.stdout, "task %s %s\n", res.Task, res.Error)
	return nil
}

// operated makes a local run an operator can act on: it serves cancelOp
// on the store's socket while the run goes on (a cancel from another
// process), and SIGINT or SIGTERM cancel it ("interrupted by signal"; a
// second signal ends the process at once, leaving the run interrupted).
// The returned context is the run's; call stop once it has returned.
func (a *app) operated(ctx context.Context, s *store.Store) (context.Context, func()) {
	s.Handle(cancelOp, func(ctx context.Context, body json.RawMessage) (any, error) {
		var req cancelRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("read the cancel request: %w", err)
		}
		res, err := run.Cancel(ctx, s, req.Task, &run.Cancelled{By: req.By, Reason: req.Reason})
		if err != nil {
			return nil, remoteErr(notFound(err))
		}
		return res, nil
	})
	ctx, cancel := context.WithCancelCause(ctx)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			signal.Stop(sig) // a second signal is the default: the process ends
			cancel(&run.Cancelled{By: store.Operator(), Reason: "interrupted by signal"})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel(nil)
		s.Handle(cancelOp, nil)
	}
}

// operateCommands are the operator's commands.
func (a *app) operateCommands() []*cobra.Command {
	return []*cobra.Command{a.cancelCommand(), a.incidentsCommand(), a.retryCommand(), a.setCommand()}
}

// reportStatus turns a run's status into the exit code (see the README's
// run status table): 1 failed or cancelled, 3 waiting or in an incident.
func (a *app) reportStatus(res *run.Result, loc storeLoc) error {
	switch res.Status {
	case store.StatusFailed:
		return withCode(ExitFailed, errors.New("run failed: "+res.Error))
	case store.StatusCancelled:
		return withCode(ExitFailed, errors.New("run "+res.Error))
	case store.StatusWaiting:
		return withCode(ExitWaiting, errSilent)
	case store.StatusIncident:
		return withCode(ExitWaiting, errors.New("incident: "+res.Error))
	}
	return nil
}

// taskDetail is the last column of sextant runs: what a waiting task
// waits for, where an incident stopped, who cancelled, what resumes an
// interrupted run.
func taskDetail(t *store.Task) string {
	switch t.Status {
	case store.StatusInterrupted:
		return fmt.Sprintf("owner %s is gone: sextant resume %s", t.Owner, shellQuote(t.ID))
	case store.StatusIncident:
		if t.Incident != nil {
			return "incident " + t.Incident.String()
		}
	case store.StatusCancelled:
		if c := t.Cancelled; c != nil {
			return cancelText(c)
		}
	}
	if len(t.Waits) > 0 {
		return waitsSummary(t.Waits)
	}
	return ""
}

func cancelText(c *store.Cancellation) string {
	if c.Reason == "" {
		return "cancelled by " + c.By
	}
	return "cancelled by " + c.By + ": " + c.Reason
}

// printOperated adds to sextant show what an operator needs of a task
// that is not simply running, waiting or done.
func printOperated(w io.Writer, t *store.Task) {
	switch {
	case t.Status == store.StatusInterrupted:
		fmt.Fprintf(w, "interrupted: owner %s is gone\n  continue: sextant resume %s\n", t.Owner, shellQuote(t.ID))
	case t.Status == store.StatusIncident && t.Incident != nil:
		fmt.Fprintf(w, "incident (%s) at %s\n  continue: sextant retry %s [--set NAME=VALUE]...\n", t.Incident.Kind, t.Incident, shellQuote(t.ID))
	case t.Status == store.StatusCancelled && t.Cancelled != nil:
		fmt.Fprintf(w, "%s at %s\n", cancelText(t.Cancelled), t.Cancelled.At.UTC().Format(time.RFC3339))
	}
}

func (a *app) incidentsCommand() *cobra.Command {
	var pipe string
	var limit int
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "incidents",
		Short: "List the runs stopped in an incident, waiting for a person",
		Long: `incidents lists the tasks in status incident, newest first: where each run
stopped (the routine element, its file:line) and why. A run stops in an
incident, instead of failing, where it cannot go on without a person: a
condition that errs or is not a boolean, a message correlation key that is
null, a step whose retries are used up. sextant retry TASK [--set NAME=VALUE]...
continues it. (sextant runs --status incident lists the same tasks.)`,
		Example: `  sextant incidents
  sextant incidents --pipeline email-triage --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := query(pipe, string(store.StatusIncident), "", limit)
			if err != nil {
				return err
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
			tasks, err := s.Tasks(cmd.Context(), q)
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
			if len(tasks) == 0 {
				fmt.Fprintln(a.stdout, "no incidents")
				return damaged
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TASK\tPIPELINE\tKIND\tWHERE\tERROR")
			for _, t := range tasks {
				inc := t.Incident
				if inc == nil {
					inc = &store.Incident{}
				}
				where := inc.Node
				if inc.Position != "" {
					where = inc.Position + " " + inc.Node
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Pipeline, inc.Kind, where, clip(inc.Error, 120))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "continue: sextant retry TASK [--set NAME=VALUE]...%s\n", loc.flag())
			return damaged
		},
	}
	c.Flags().StringVar(&pipe, "pipeline", "", "only tasks of this pipeline (by name)")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many tasks")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, false)
	return c
}

func (a *app) retryCommand() *cobra.Command {
	var sets []string
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "retry TASK",
		Short: "Continue a run stopped in an incident, from the element that stopped it",
		Long: `retry continues a task in status incident: --set assigns variables first (the
value is JSON when it parses, else a string; one that starts like JSON must be
valid JSON), then the run goes on from the element where it stopped — the
condition or correlation key is evaluated again, a step whose retries were
used up runs once more. The assignment is recorded, and a replay of the task
makes it at the same point. The run ends, waits or stops in an incident again
as sextant run reports (exit 0, 1 or 3).

A task that is not in an incident is an error (exit 2) and nothing changes.`,
		Example: `  sextant retry 01JD3K… --set 'approved=true'
  sextant retry 01JD3K… --set 'customer={"id":"c-17"}' --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := parseOperatorSets(sets)
			if err != nil {
				return err
			}
			tr, err := a.openTaskRun(cmd.Context(), &sf, args[0])
			if err != nil {
				return err
			}
			defer tr.close(cmd.Context())
			if tr.via != nil {
				res, err := tr.via.Retry(cmd.Context(), args[0], vars)
				if err != nil {
					return operateAPIErr(err)
				}
				return a.report(res, asJSON, tr.loc)
			}
			ctx, stop := a.operated(cmd.Context(), tr.s)
			defer stop()
			res, err := tr.runner.Retry(ctx, args[0], vars)
			if err != nil {
				return notFound(err)
			}
			return a.report(res, asJSON, tr.loc)
		},
	}
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().StringArrayVar(&sets, "set", nil, "assign variable NAME=VALUE before going on (repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, true)
	return c
}

func (a *app) setCommand() *cobra.Command {
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "set TASK NAME=VALUE...",
		Short: "Change the variables of a waiting run, or of one stopped in an incident",
		Long: `set assigns variables of a task that waits (for a person, a timer, a message,
a signal) or stopped in an incident, without running it: the run sees them
when it goes on (sextant resume, send, signal, retry). VALUE is JSON when it
parses, else a string; a value that starts like JSON must be valid JSON. The
assignment is recorded as an event, and a replay of the task makes it at the
same point.

A task in any other status is an error (exit 2) and nothing changes.`,
		Example: `  sextant set 01JD3K… priority=2 'customer={"tier":"gold"}'`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := parseOperatorSets(args[1:])
			if err != nil {
				return err
			}
			tr, err := a.openTaskRun(cmd.Context(), &sf, args[0])
			if err != nil {
				return err
			}
			defer tr.close(cmd.Context())
			var res *run.Result
			if tr.via != nil {
				if res, err = tr.via.Set(cmd.Context(), args[0], vars); err != nil {
					return operateAPIErr(err)
				}
			} else if res, err = tr.runner.Set(cmd.Context(), args[0], vars); err != nil {
				return notFound(err)
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			names := make([]string, 0, len(vars))
			for k := range vars {
				names = append(names, k)
			}
			sortStrings(names)
			fmt.Fprintf(a.stdout, "task %s %s: set %s\n", res.Task, res.Status, strings.Join(names, ", "))
			return nil
		},
	}
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, true)
	return c
}

// parseOperatorSets parses NAME=VALUE assignments as parseSets does, but a
// value that starts like JSON (an object, array or string) must be valid
// JSON: a typo is an error (exit 2), never a string assigned in its place.
func parseOperatorSets(sets []string) (map[string]any, error) {
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErr(fmt.Errorf("%q: want NAME=VALUE", s))
		}
		if t := strings.TrimSpace(v); t != "" && strings.ContainsAny(t[:1], `{["`) {
			var x any
			dec := json.NewDecoder(bytes.NewReader([]byte(t)))
			if err := dec.Decode(&x); err != nil || dec.More() {
				if err == nil {
					err = errors.New("more than one value")
				}
				return nil, withInvalid(fmt.Errorf("%s: not valid JSON: %v", k, err))
			}
		}
	}
	return parseSets(sets)
}

// notCancelled is a store.Query filter: a dataset leaves cancelled tasks
// out unless asked for them.
func notCancelled(t *store.Task) bool { return t.Status != store.StatusCancelled }
