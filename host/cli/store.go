package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// storeHelp is --store's help: the store rule (project.CommonStore and
// RATIONALE "Why one store rule for every command").
const storeHelp = "store directory (default: $SEXTANT_STORE, else sextant.toml's store, else .sextant beside the pipeline, else ./.sextant)"

// storeFlags hold a command's --store (and, for task commands, --pipeline
// naming the pipeline whose store to use).
type storeFlags struct {
	dir      string
	pipeline string
	// pipelineFlag is set when the command has --pipeline FILE.
	pipelineFlag bool
}

func (f *storeFlags) add(c *cobra.Command, withPipeline bool) {
	c.Flags().StringVar(&f.dir, "store", "", storeHelp)
	if withPipeline {
		c.Flags().StringVar(&f.pipeline, "pipeline", "", "pipeline file whose store to use")
		f.pipelineFlag = true
	}
}

// common applies rules 1–3 of the store rule; ok is false when none of
// them named a store.
func (f *storeFlags) common() (project.StoreLoc, bool, error) {
	l, ok, err := project.CommonStore(f.dir)
	if err != nil {
		return project.StoreLoc{}, false, withInvalid(err)
	}
	return l, ok, nil
}

// locate finds the store of a command that runs the loaded pipeline p.
func (f *storeFlags) locate(p *pipeline.Pipeline) (project.StoreLoc, error) {
	if l, ok, err := f.common(); ok || err != nil {
		return l, err
	}
	return project.StoreLoc{Dir: project.PipelineStore(p.File, p.Store.Dir), From: project.FromPipeline}, nil
}

// locateTask finds the store of a command about recorded tasks (show,
// feedback, resume, runs, export, review, strategy log): rules 1–3, then
// --pipeline's store, then ./.sextant when it exists.
func (a *app) locateTask(ctx context.Context, f *storeFlags) (project.StoreLoc, error) {
	if l, ok, err := f.common(); ok || err != nil {
		return l, err
	}
	if f.pipeline != "" {
		p, err := pipeline.Load(ctx, f.pipeline, nil, pipeline.Options{})
		if err != nil {
			return project.StoreLoc{}, fmt.Errorf("--pipeline: %w", err)
		}
		return project.StoreLoc{Dir: project.PipelineStore(p.File, p.Store.Dir), From: project.FromPipeline}, nil
	}
	if l, ok := project.CwdStore(); ok {
		return l, nil
	}
	return project.StoreLoc{}, withInvalid(project.NoStore(f.pipelineFlag, func(dir string) string {
		return report.CommandLine(a.args) + " --store " + report.ShellQuote(dir)
	}))
}

// storeMode says what a command may do to a store.
type storeMode = layer.Mode

const (
	readStore   = layer.Read   // read only; the store must exist
	updateStore = layer.Update // write to a store that must exist (feedback, resume, review)
	createStore = layer.Create // write, creating the store (run, import, evolve)
)

// openStore opens the store at dir. Only createStore may create one: a
// command given the wrong directory says so instead of leaving an empty
// store behind.
func (a *app) openStore(ctx context.Context, dir string, mode storeMode) (*store.Store, error) {
	return a.openStoreWith(ctx, dir, mode, nil)
}

// openStoreWith opens the store with a pipeline's [store] settings
// (redaction patterns, fsync); p may be nil. A store held by sextant
// serve is an *layer.HeldError naming it: commands that go through its API
// open an layer.Backend instead.
func (a *app) openStoreWith(ctx context.Context, dir string, mode storeMode, p *pipeline.Pipeline) (*store.Store, error) {
	return layer.OpenStore(ctx, dir, mode, p, a.logger, a.command)
}

// storeCommand is `sextant store`: the store's own health (check) and
// recovery (salvage) when files of it are damaged.
func (a *app) storeCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "store",
		Short: "Check a store for damage, or salvage what is readable into a new one",
		Long:  help("store"),
	}
	c.AddCommand(a.storeCheckCommand(), a.storeSalvageCommand())
	return c
}

func (a *app) storeCheckCommand() *cobra.Command {
	var sf storeFlags
	var asJSON bool
	c := &cobra.Command{
		Use:     "check",
		Short:   "Report the store's damaged files, tasks and records (exit 1 if any)",
		Example: help("store-check.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, loc, err := a.readTaskStore(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			defer s.Close()
			rep, err := s.Check(cmd.Context())
			if err != nil {
				return err
			}
			if err := a.emit(asJSON, rep, func(w io.Writer) error {
				report.WriteCheck(w, rep, loc.Dir, report.StoreFlag(loc))
				return nil
			}); err != nil {
				return err
			}
			if rep.Damaged() {
				return errSilent
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, false)
	return c
}

func (a *app) storeSalvageCommand() *cobra.Command {
	var sf storeFlags
	var to string
	var asJSON bool
	c := &cobra.Command{
		Use:     "salvage --to DIR",
		Short:   "Copy every readable task and record into a new store, and list what was left behind",
		Example: help("store-salvage.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loc, err := a.locateTask(cmd.Context(), &sf)
			if err != nil {
				return err
			}
			rep, err := layer.SalvageStore(cmd.Context(), loc.Dir, to, a.logger, a.command)
			if err != nil {
				return err
			}
			return a.printSalvage(rep, to, asJSON)
		},
	}
	c.Flags().StringVar(&to, "to", "", "the new store's directory (absent or empty)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, false)
	return c
}

// printSalvage reports what salvage copied into to and what it left
// behind (exit 1 when anything).
func (a *app) printSalvage(rep *store.SalvageReport, to string, asJSON bool) error {
	if err := a.emit(asJSON, rep, func(w io.Writer) error {
		report.WriteSalvage(w, rep, to)
		return nil
	}); err != nil {
		return err
	}
	if len(rep.Left) > 0 {
		return errSilent
	}
	return nil
}
