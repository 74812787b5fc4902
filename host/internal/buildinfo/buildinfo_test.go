package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestFromBuild(t *testing.T) {
	noSource := func() (string, string, bool) { return "", "", false }
	source := func() (string, string, bool) { return "abcdef0123456789", "2026-01-02T03:04:05Z", true }
	build := func(main string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Version: main},
			Deps: []*debug.Module{{Path: "github.com/tetratelabs/wazero", Version: "v1.9.0"}}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	tests := []struct {
		name    string
		release string
		bi      *debug.BuildInfo
		source  func() (string, string, bool)
		want    Info
	}{
		{"no build info", "dev", nil, source, Info{Version: "dev"}},
		{"release wins", "v1.2.3", build("v0.0.0-x", "vcs.revision", "aaa", "vcs.time", "T"), noSource,
			Info{Version: "v1.2.3", Revision: "aaa", RevisionTime: "T", RevisionFrom: "build", Wazero: "v1.9.0"}},
		{"module version", "dev", build("v0.4.0"), noSource, Info{Version: "v0.4.0", Wazero: "v1.9.0"}},
		{"dirty build", "dev", build("(devel)", "vcs.revision", "bbb", "vcs.modified", "true"), source,
			Info{Version: "(devel)", Revision: "bbb-dirty", RevisionFrom: "build", Wazero: "v1.9.0"}},
		{"go run asks the source", "dev", build("(devel)"), source,
			Info{Version: "(devel)", Revision: "abcdef0123456789-dirty", RevisionTime: "2026-01-02T03:04:05Z", RevisionFrom: "source", Wazero: "v1.9.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.API, want.Go, want.OSArch = sdk.APIVersion, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
			if got := fromBuild(tt.release, tt.bi, tt.source); got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestString(t *testing.T) {
	base := Info{Version: "v1.0.0", API: 2, Go: "go1.26.0", OSArch: "linux/amd64"}
	withRev := base
	withRev.Revision, withRev.RevisionTime = "0123456789abcdef-dirty", "2026-01-02T03:04:05Z"
	short := base
	short.Revision = "abc"
	for _, tt := range []struct {
		in   Info
		want string
	}{
		{base, "sextant v1.0.0 (plugin api 2, go1.26.0, linux/amd64)"},
		{withRev, "sextant v1.0.0 (revision 0123456789ab-dirty 2026-01-02T03:04:05Z, plugin api 2, go1.26.0, linux/amd64)"},
		{short, "sextant v1.0.0 (revision abc, plugin api 2, go1.26.0, linux/amd64)"},
	} {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

// TestGitRevision asks a real git about a real checkout: clean, then with
// a tracked file changed; and about no checkout at all.
func TestGitRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_COMMITTER_DATE=2026-01-02T04:04:05+01:00", "GIT_AUTHOR_DATE=2026-01-02T04:04:05+01:00")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "f")
	git("commit", "-q", "-m", "one")
	head := git("rev-parse", "HEAD")
	if rev, at, dirty := gitRevision(dir); rev != head || at != "2026-01-02T03:04:05Z" || dirty {
		t.Errorf("clean: got %q %q %v, want %q 2026-01-02T03:04:05Z false", rev, at, dirty, head)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rev, _, dirty := gitRevision(dir); rev != head || !dirty {
		t.Errorf("changed: got %q %v, want %q true", rev, dirty, head)
	}
	if rev, _, _ := gitRevision(t.TempDir()); rev != "" {
		t.Errorf("no checkout: got revision %q", rev)
	}
	if rev, _, _ := gitRevision(""); rev != "" {
		t.Errorf("no root: got revision %q", rev)
	}
}
