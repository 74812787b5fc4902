package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/sdk"
)

func (a *app) pluginsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "plugins",
		Short: "List, inspect, verify and scaffold plugins",
		Long: `Plugins are folders holding a plugin.toml and a .wasm module or an executable.
They are searched, first match wins, in: --plugin-dir flags, $SEXTANT_PLUGIN_PATH,
./plugins, $XDG_DATA_HOME/sextant/plugins; builtins come last.`,
		Example: "  sextant plugins list\n  sextant plugins inspect bpmn --json",
	}
	c.AddCommand(a.pluginsListCommand(), a.pluginsInspectCommand(), a.pluginsVerifyCommand(), a.pluginsInitCommand())
	return c
}

// discover finds every plugin on the search path. Problems with individual
// plugins come back as err alongside the entries that are fine.
func (a *app) discover(pipelineDir string) ([]plugin.Entry, error) {
	return plugin.Discover(plugin.SearchPath(a.pluginDirs, pipelineDir), sdk.Registered())
}

// registry builds a registry over the search path, failing on any bad plugin.
func (a *app) registry(pipelineDir string) (*plugin.Registry, error) {
	entries, err := a.discover(pipelineDir)
	if err != nil {
		return nil, err
	}
	return plugin.NewRegistry(entries, append(transportOptions(a.logger), plugin.WithLogger(a.logger))...), nil
}

type listedPlugin struct {
	Name        string   `json:"name"`
	Kind        sdk.Kind `json:"kind"`
	Version     string   `json:"version"`
	Transport   string   `json:"transport"`
	Checksum    string   `json:"checksum"`
	Source      string   `json:"source"`
	Description string   `json:"description,omitempty"`
	Shadows     []string `json:"shadows,omitempty"`
}

func listed(e plugin.Entry) listedPlugin {
	return listedPlugin{Name: e.Name, Kind: e.Kind, Version: e.Version, Transport: e.Transport,
		Checksum: e.Checksum, Source: e.Source, Description: e.Description, Shadows: e.Shadows}
}

func (a *app) pluginsListCommand() *cobra.Command {
	var asJSON bool
	var kind, pipe string
	c := &cobra.Command{
		Use:   "list",
		Short: "List installed plugins: name, kind, version, transport, source, checksum state",
		Example: `  sextant plugins list
  sextant plugins list --kind gate --json
  sextant --plugin-dir ./my-plugins plugins list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kind != "" && !sdk.Kind(kind).Valid() {
				return usageErr(fmt.Errorf("--kind: %q is not navigator, provider, gate or tool", kind))
			}
			entries, derr := a.discover(pluginBase(pipe))
			var rows []listedPlugin
			for _, e := range entries {
				if kind == "" || string(e.Kind) == kind {
					rows = append(rows, listed(e))
				}
			}
			if asJSON {
				if rows == nil {
					rows = []listedPlugin{}
				}
				if err := writeJSON(a.stdout, rows); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tKIND\tVERSION\tTRANSPORT\tCHECKSUM\tSOURCE")
				for _, r := range rows {
					src := r.Source
					if len(r.Shadows) > 0 {
						src += " (shadows " + strings.Join(r.Shadows, ", ") + ")"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Kind, r.Version, r.Transport, r.Checksum, src)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			return derr
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	c.Flags().StringVar(&kind, "kind", "", "only plugins of this kind (navigator, provider, gate)")
	pipelineFlag(c, &pipe)
	return c
}

type inspected struct {
	listedPlugin
	API      int               `json:"api"`
	Config   []sdk.ConfigField `json:"config,omitempty"`
	Requests *plugin.Requests  `json:"requests,omitempty"`
	Artifact string            `json:"artifact,omitempty"`
	SHA256   string            `json:"sha256,omitempty"`
}

func (a *app) pluginsInspectCommand() *cobra.Command {
	var asJSON bool
	var pipe string
	c := &cobra.Command{
		Use:   "inspect NAME",
		Short: "Load a plugin and show what it says about itself",
		Long: `inspect opens the plugin over its transport (verifying its checksum first),
asks it to Describe itself, and shows that answer with its manifest.`,
		Example: "  sextant plugins inspect bpmn\n  sextant plugins inspect pii-gate --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := a.registry(pluginBase(pipe))
			if err != nil {
				return err
			}
			h, err := reg.Open(cmd.Context(), args[0], plugin.Grant{})
			if err != nil {
				return err
			}
			defer h.Close(context.WithoutCancel(cmd.Context()))
			info := h.Plugin.Describe()
			out := inspected{listedPlugin: listed(h.Entry), API: info.API, Config: info.Config}
			out.Description = info.Description
			if m := h.Entry.Manifest; m != nil {
				out.Requests = &m.Requests
				out.Artifact = m.ArtifactPath()
				out.SHA256 = m.Artifact().SHA256
			}
			if asJSON {
				return writeJSON(a.stdout, out)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "name:\t%s\n", out.Name)
			fmt.Fprintf(w, "kind:\t%s\n", out.Kind)
			fmt.Fprintf(w, "version:\t%s\n", out.Version)
			fmt.Fprintf(w, "api:\t%d\n", out.API)
			fmt.Fprintf(w, "transport:\t%s\n", out.Transport)
			fmt.Fprintf(w, "source:\t%s\n", out.Source)
			fmt.Fprintf(w, "checksum:\t%s\n", out.Checksum)
			if out.Description != "" {
				fmt.Fprintf(w, "description:\t%s\n", out.Description)
			}
			if out.Artifact != "" {
				fmt.Fprintf(w, "artifact:\t%s\n", out.Artifact)
			}
			if out.Requests != nil && len(out.Requests.HTTP) > 0 {
				fmt.Fprintf(w, "requests http:\t%s\n", strings.Join(out.Requests.HTTP, ", "))
			}
			if out.Requests != nil && out.Requests.Memory != "" {
				fmt.Fprintf(w, "requests memory:\t%s\n", out.Requests.Memory)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(out.Config) > 0 {
				fmt.Fprintln(a.stdout, "config:")
				w = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				for _, f := range out.Config {
					def := ""
					if f.Default != nil {
						def = fmt.Sprintf(" (default %v)", f.Default)
					}
					req := ""
					if f.Required {
						req = " required"
					}
					fmt.Fprintf(w, "  %s\t%s%s%s\t%s\n", f.Name, f.Type, req, def, f.Doc)
				}
				return w.Flush()
			}
			return nil
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

// verified is one plugin's line in plugins verify --json.
type verified struct {
	Name      string `json:"name"`
	Status    string `json:"status"` // ok or fail
	Pinned    string `json:"pinned,omitempty"`
	Transport string `json:"transport,omitempty"`
	Version   string `json:"version,omitempty"`
	Checksum  string `json:"checksum,omitempty"`
	Source    string `json:"source,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (a *app) pluginsVerifyCommand() *cobra.Command {
	var pin, asJSON bool
	var pipe string
	c := &cobra.Command{
		Use:   "verify [NAME...]",
		Short: "Check every plugin's manifest, checksum and Describe answer",
		Long: `verify checks each plugin on the search path (or the ones named): the manifest
is valid, the artifact matches its pinned sha256, the plugin loads over its
transport and describes itself as its manifest says. --pin writes the sha256
of unpinned artifacts into their manifests.`,
		Example: "  sextant plugins verify\n  sextant plugins verify --pin my-gate\n  sextant plugins verify --pipeline pipelines/email-triage/pipeline.toml --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			entries, derr := a.discover(pluginBase(pipe))
			var errs []error
			if derr != nil {
				errs = append(errs, derr)
			}
			want := map[string]bool{}
			for _, n := range args {
				want[n] = true
			}
			reg := plugin.NewRegistry(entries, append(transportOptions(a.logger), plugin.WithLogger(a.logger))...)
			found := map[string]bool{}
			rows := []verified{}
			for _, e := range entries {
				if len(want) > 0 && !want[e.Name] {
					continue
				}
				found[e.Name] = true
				v := verified{Name: e.Name, Status: "ok", Transport: e.Transport, Version: e.Version, Checksum: e.Checksum, Source: e.Source}
				if e.Builtin != nil {
					rows = append(rows, v)
					continue
				}
				if pin && e.Checksum == plugin.ChecksumUnpinned {
					sum, err := plugin.Pin(e.Manifest)
					if err != nil {
						errs = append(errs, err)
						v.Status, v.Error = "fail", err.Error()
						rows = append(rows, v)
						continue
					}
					v.Pinned, v.Checksum = sum, plugin.ChecksumOK
				}
				h, err := reg.Open(cmd.Context(), e.Name, plugin.Grant{})
				if err != nil {
					errs = append(errs, err)
					v.Status, v.Error = "fail", err.Error()
					rows = append(rows, v)
					continue
				}
				h.Close(context.WithoutCancel(cmd.Context()))
				rows = append(rows, v)
			}
			if asJSON {
				if err := writeJSON(a.stdout, rows); err != nil {
					return err
				}
			} else {
				for _, v := range rows {
					switch {
					case v.Status == "fail":
						fmt.Fprintf(a.stdout, "FAIL     %s (%s)\n", v.Name, v.Source)
					case v.Transport == "builtin":
						fmt.Fprintf(a.stdout, "ok       %s (builtin)\n", v.Name)
					default:
						if v.Pinned != "" {
							fmt.Fprintf(a.stdout, "pinned   %s sha256 %s\n", v.Name, v.Pinned)
						}
						fmt.Fprintf(a.stdout, "ok       %s %s %s checksum %s (%s)\n", v.Name, v.Transport, v.Version, v.Checksum, v.Source)
					}
				}
			}
			for _, n := range args {
				if !found[n] {
					errs = append(errs, reg.UnknownError(n, ""))
				}
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
