package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/dial"
	"github.com/sextant-dev/sextant/sdk"
)

func (a *app) pluginsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:     "plugins",
		Short:   "List, inspect, verify and scaffold plugins",
		Long:    help("plugins"),
		Example: "  sextant plugins list\n  sextant plugins inspect bpmn --json",
	}
	c.AddCommand(a.pluginsListCommand(), a.pluginsInspectCommand(), a.pluginsVerifyCommand(), a.pluginsInitCommand())
	return c
}

// discover finds every plugin on the search path. Problems with individual
// plugins come back as err alongside the entries that are fine.
func (a *app) discover(pipelineDir string) ([]plugin.Entry, error) {
	return plugin.Find(a.pluginDirs, pipelineDir)
}

// registry builds a registry over the search path, failing on any bad plugin.
func (a *app) registry(pipelineDir string) (*plugin.Registry, error) {
	return plugin.Search(a.pluginDirs, pipelineDir, a.pluginOptions()...)
}

// pluginOptions connect a registry's wasm and process transports and log
// its warnings.
func (a *app) pluginOptions() []plugin.Option {
	return append(dial.Options(a.logger), plugin.WithLogger(a.logger))
}

func (a *app) pluginsListCommand() *cobra.Command {
	var asJSON bool
	var kind, pipe string
	c := &cobra.Command{
		Use:     "list",
		Short:   "List installed plugins: name, kind, version, transport, source, checksum state",
		Example: help("plugins-list.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kind != "" && !sdk.Kind(kind).Valid() {
				return usageErr(fmt.Errorf("--kind: %q is not navigator, provider, gate or tool", kind))
			}
			entries, derr := a.discover(pluginBase(pipe))
			rows := plugin.List(entries, sdk.Kind(kind))
			if err := a.emit(asJSON, rows, func(w io.Writer) error { return plugin.WriteList(w, rows) }); err != nil {
				return err
			}
			return derr
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	c.Flags().StringVar(&kind, "kind", "", "only plugins of this kind (navigator, provider, gate)")
	pipelineFlag(c, &pipe)
	return c
}

func (a *app) pluginsInspectCommand() *cobra.Command {
	var asJSON bool
	var pipe string
	c := &cobra.Command{
		Use:     "inspect NAME",
		Short:   "Load a plugin and show what it says about itself",
		Long:    help("plugins-inspect"),
		Example: "  sextant plugins inspect bpmn\n  sextant plugins inspect pii-gate --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := a.registry(pluginBase(pipe))
			if err != nil {
				return err
			}
			in, err := reg.Inspect(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.emit(asJSON, in, in.WriteText)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	pipelineFlag(c, &pipe)
	c.ValidArgsFunction = a.completePlugins(&pipe)
	return c
}

// pipelineFlag adds --pipeline FILE to a plugins command: search the
// plugins folder beside that pipeline, as run does.
func pipelineFlag(c *cobra.Command, pipe *string) {
	c.Flags().StringVar(pipe, "pipeline", "", "search ./plugins beside this pipeline file, as run does (default: ./plugins here)")
}

// pluginBase is the directory whose plugins folder the plugins commands
// search: beside --pipeline, else the working directory.
func pluginBase(pipe string) string {
	if pipe != "" {
		return filepath.Dir(pipe)
	}
	return "."
}

func (a *app) pluginsVerifyCommand() *cobra.Command {
	var pin, asJSON bool
	var pipe string
	c := &cobra.Command{
		Use:     "verify [NAME...]",
		Short:   "Check every plugin's manifest, checksum and Describe answer",
		Long:    help("plugins-verify"),
		Example: "  sextant plugins verify\n  sextant plugins verify --pin my-gate\n  sextant plugins verify --pipeline pipelines/email-triage/pipeline.toml --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			entries, derr := a.discover(pluginBase(pipe))
			reg := plugin.NewRegistry(entries, a.pluginOptions()...)
			rows, errs := reg.Verify(cmd.Context(), args, pin)
			if derr != nil {
				errs = append([]error{derr}, errs...)
			}
			if err := a.emit(asJSON, rows, func(w io.Writer) error { return plugin.WriteVerified(w, rows) }); err != nil {
				return err
			}
			if len(errs) > 0 {
				return withInvalid(errors.Join(errs...))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&pin, "pin", false, "write the sha256 of unpinned artifacts into their manifests")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	pipelineFlag(c, &pipe)
	c.ValidArgsFunction = a.completePlugins(&pipe)
	return c
}

// withInvalid makes any plugin failure exit 2 (invalid plugin).
func withInvalid(err error) error { return withCode(ExitInvalid, err) }
