package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/buildinfo"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/scaffold"
)

// version is set at link time: -ldflags "-X github.com/sextant-dev/sextant/host/cli.version=v1.2.3".
var version = "dev"

// currentVersion says what this binary is (sextant version).
func currentVersion() buildinfo.Info { return buildinfo.Read(version, scaffold.SourceRoot) }

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print the sextant version, the commit it was built from and the plugin api it speaks",
		Long:    help("version"),
		Example: "  sextant version\n  sextant --version\n  sextant version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			return a.emit(asJSON, v, func(w io.Writer) error { _, err := fmt.Fprintln(w, v); return err })
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return c
}

// versionFlag makes --version on the root command print what `sextant
// version` prints; the version is worked out only when asked for.
func versionFlag(root *cobra.Command) {
	cobra.AddTemplateFunc("sextantVersion", func() string { return currentVersion().String() })
	root.Version = version
	root.SetVersionTemplate("{{sextantVersion}}\n")
}

func writeJSON(w io.Writer, v any) error { return report.WriteSafeJSON(w, v) }

// emit prints v as JSON with --json, else as text writes it.
func (a *app) emit(asJSON bool, v any, text func(io.Writer) error) error {
	if asJSON {
		return writeJSON(a.stdout, v)
	}
	return text(a.stdout)
}
