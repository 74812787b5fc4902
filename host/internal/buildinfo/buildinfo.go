// Package buildinfo says what a sextant binary is: its release version, the
// VCS revision it was built from, the plugin api it speaks and the Go and
// wazero it was built with. It reads the build information Go stamps into
// the binary and, for a go run binary, which carries no revision, asks git
// about the source tree. It prints nothing.
package buildinfo

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Info is what `sextant version` reports.
type Info struct {
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

// Read says what this binary is. release is the version set at link time
// ("dev" when none was); then the module version go build stamped (a tag,
// or a pseudo-version) stands. sourceRoot, asked only when the build
// stamped no revision (go run), names the source tree the binary was
// compiled from, "" when it is gone; git is asked about it.
func Read(release string, sourceRoot func() string) Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(release, bi, func() (string, string, bool) { return gitRevision(sourceRoot()) })
}

// fromBuild is Read over build information bi (nil when the binary has
// none) and a source revision lookup.
func fromBuild(release string, bi *debug.BuildInfo, source func() (rev, at string, dirty bool)) Info {
	v := Info{Version: release, API: sdk.APIVersion, Go: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
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
		v.Revision, v.RevisionTime, dirty = source()
		if v.Revision != "" {
			v.RevisionFrom = "source"
		}
	}
	if dirty && v.Revision != "" {
		v.Revision += "-dirty"
	}
	return v
}

// gitRevision asks git for the commit of the source tree at root and
// whether it has changes; "" when root is "", or is no checkout, or there
// is no git.
func gitRevision(root string) (rev, at string, dirty bool) {
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
func (v Info) String() string {
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
