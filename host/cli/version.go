package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/scaffold"
	"github.com/sextant-dev/sextant/sdk"
)

// version is set at link time: -ldflags "-X github.com/sextant-dev/sextant/host/cli.version=v1.2.3".
var version = "dev"

type versionInfo struct {
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from, with "-dirty"
	// when the tree had changes; RevisionTime its commit time.
	Revision     string `json:"revision,omitempty"`
	RevisionTime string `json:"revision_time,omitempty"`
	// RevisionFrom says where Revision came from: "build" (stamped by go
	// build) or "source" (git, asked about the source tree a go run binary
	// was compiled from).
	RevisionFrom string `json:"revision_from,omitempty"`
	API          int    `json:"api"`
	Go           string `json:"go"`
	Wazero       string `json:"wazero,omitempty"`
	OSArch       string `json:"os_arch"`
}

// currentVersion says what this binary is: the version set by the Makefile,
// else the module version go build stamped (a tag, or a pseudo-version), and
// the VCS revision from the build info. go run stamps no revision; then git
// is asked about the source tree the binary was compiled from, if it is
// still there.
func currentVersion() versionInfo {
	v := versionInfo{Version: version, API: sdk.APIVersion, Go: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && bi.Main.Version != "" {
		v.Version = bi.Main.Version // "(devel)" when go knew nothing better
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/tetratelabs/wazero" {
			v.Wazero = d.Version
		}
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision, v.RevisionFrom = s.Value, "build"
		case "vcs.time":
			v.RevisionTime = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if v.Revision == "" {
		v.Revision, v.RevisionTime, dirty = sourceRevision()
		if v.Revision != "" {
			v.RevisionFrom = "source"
		}
	}
	if dirty && v.Revision != "" {
		v.Revision += "-dirty"
	}
	return v
}

// sourceRevision asks git for the commit of the source tree this binary was
// compiled from; "" when there is none or no git.
func sourceRevision() (rev, at string, dirty bool) {
	root := scaffold.SourceRoot()
	if root == "" {
		return "", "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", root, "log", "-1", "--format=%H %cI").Output()
	if err != nil {
		return "", "", false
	}
	rev, at, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		at = t.UTC().Format(time.RFC3339)
	}
	st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
	return rev, at, err == nil && len(strings.TrimSpace(string(st))) > 0
}

// String is the one-line form `sextant version` and `sextant --version`
// print.
func (v versionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sextant %s (", v.Version)
	if v.Revision != "" {
		r, dirty := strings.CutSuffix(v.Revision, "-dirty")
		r = r[:min(12, len(r))]
		if dirty {
			r += "-dirty"
		}
		fmt.Fprintf(&b, "revision %s", r)
		if v.RevisionTime != "" {
			fmt.Fprintf(&b, " %s", v.RevisionTime)
		}
		b.WriteString(", ")
	}
	fmt.Fprintf(&b, "plugin api %d, %s, %s)", v.API, v.Go, v.OSArch)
	return b.String()
}

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the sextant version, the commit it was built from and the plugin api it speaks",
		Long: `version prints the release version (set by make), else the module version go
build stamped from the repository's tags, and the VCS revision. A binary from go
run carries no revision; sextant then asks git about its source tree.`,
		Example: "  sextant version\n  sextant --version\n  sextant version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			if asJSON {
				return writeJSON(a.stdout, v)
			}
			fmt.Fprintln(a.stdout, v)
			return nil
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

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
