package scaffold_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/sextant-dev/sextant/host/internal/scaffold"
	"github.com/sextant-dev/sextant/sdk"
)

// repoRoot is the sextant checkout this test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestWriteProject: init writes every embedded file, byte for byte, and a
// second init into the same folder writes nothing and names each file in
// the way.
func TestWriteProject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proj")
	files, err := scaffold.WriteProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".github/workflows/sextant.yml", "pipeline.toml", "sextant.toml", "inputs/refund.json"} {
		if !slices.Contains(files, want) {
			t.Errorf("wrote %q, missing %s", files, want)
		}
	}
	if !slices.IsSorted(files) {
		t.Errorf("files not sorted: %q", files)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(repoRoot(t), "host/internal/scaffold/project", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from project/%s", f, f)
		}
	}

	_, err = scaffold.WriteProject(dir)
	if !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("second init: %v, want sdk.ErrInvalid", err)
	}
	want := "init " + dir + ": would overwrite " + strings.Join(files, ", ") + "; nothing written (init a new or empty directory)"
	if err.Error() != want {
		t.Errorf("second init:\n got %s\nwant %s", err, want)
	}
}

// TestWriteProjectRefuses: a folder with one of the files, or a file where
// the folder should be, gets nothing written.
func TestWriteProjectRefuses(t *testing.T) {
	tmp := t.TempDir()
	half := filepath.Join(tmp, "half")
	if err := os.MkdirAll(half, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(half, "strategy.toml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"one file in the way", half, "init " + half + ": would overwrite strategy.toml; nothing written (init a new or empty directory)"},
		{"not a directory", file, "init " + file + ": not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scaffold.WriteProject(tc.dir)
			if !errors.Is(err, sdk.ErrInvalid) || err.Error() != tc.want {
				t.Fatalf("got %v, want %q matching sdk.ErrInvalid", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(half, "pipeline.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused init wrote pipeline.toml: %v", err)
	}
}

// TestLocateSDK: a checkout's sdk is the one its host module requires, and
// a folder that is no sextant checkout is refused, saying why.
func TestLocateSDK(t *testing.T) {
	root := repoRoot(t)
	src, err := scaffold.LocateSDK(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, r := range mf.Require {
		if r.Mod.Path == sdk.ModulePath {
			want = r.Mod.Version
		}
	}
	if src.Version != want || src.Dir != filepath.Join(root, "sdk") || len(src.GoMod) == 0 {
		t.Errorf("LocateSDK(checkout) = version %q dir %q, want %q %q", src.Version, src.Dir, want, filepath.Join(root, "sdk"))
	}

	// A test binary records no sdk release, so no checkout means this
	// package's own source tree.
	if def, err := scaffold.LocateSDK(""); err != nil || def.Dir != src.Dir {
		t.Errorf("LocateSDK(\"\") = dir %q, %v; want %q", def.Dir, err, src.Dir)
	}

	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(other, "sdk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "sdk", "go.mod"), []byte("module example.com/sdk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"no sdk", t.TempDir(), "is not a sextant checkout: no such file or directory"},
		{"another module", other, "is not a sextant checkout: " + filepath.Join(other, "sdk", "go.mod") + " is not module " + sdk.ModulePath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scaffold.LocateSDK(tc.dir)
			if !errors.Is(err, sdk.ErrInvalid) || !strings.HasSuffix(err.Error(), tc.want) {
				t.Fatalf("got %v, want ...%q matching sdk.ErrInvalid", err, tc.want)
			}
		})
	}
}

// TestWritePlugin: each kind gets its files; go.mod requires the sdk alone,
// by version, with no replace; a local sdk adds a go.work using it; a
// folder that is not empty is refused.
func TestWritePlugin(t *testing.T) {
	src, err := scaffold.LocateSDK(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"navigator", "provider", "gate", "tool"} {
		t.Run(kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "my-"+kind)
			p := scaffold.Plugin{Name: "my-" + kind, Kind: kind, API: sdk.APIVersion, Module: "example.com/my-" + kind}
			if err := scaffold.WritePlugin(dir, p, src); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"main.go", "main_test.go", "plugin.toml", "Makefile", "go.mod", "go.sum", "go.work"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Error(err)
				}
			}
			data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			mf, err := modfile.Parse("go.mod", data, nil)
			if err != nil {
				t.Fatal(err)
			}
			if mf.Module.Mod.Path != p.Module || len(mf.Replace) > 0 {
				t.Errorf("go.mod: module %q, %d replaces", mf.Module.Mod.Path, len(mf.Replace))
			}
			var direct []string
			for _, r := range mf.Require {
				if !r.Indirect {
					direct = append(direct, r.Mod.String())
				}
			}
			if want := []string{sdk.ModulePath + "@" + src.Version}; !slices.Equal(direct, want) {
				t.Errorf("go.mod requires %q directly, want %q", direct, want)
			}
			manifest, _ := os.ReadFile(filepath.Join(dir, "plugin.toml"))
			if !strings.Contains(string(manifest), `kind = "`+kind+`"`) {
				t.Errorf("plugin.toml does not say kind %q:\n%s", kind, manifest)
			}
			err = scaffold.WritePlugin(dir, p, src)
			if !errors.Is(err, sdk.ErrInvalid) || err.Error() != dir+" already exists and is not empty" {
				t.Errorf("second write: %v", err)
			}
		})
	}
}

// TestRenderPluginPublished: against a published sdk (no local folder) the
// project has no go.work, and go.sum carries the sdk's own checksums.
func TestRenderPluginPublished(t *testing.T) {
	src := scaffold.SDK{Version: "v1.2.3", GoMod: []byte("module " + sdk.ModulePath + "\n\ngo 1.26\n"),
		GoSum: []byte("a v1 h1:x\n"), Sum: []byte(sdk.ModulePath + " v1.2.3 h1:y\n")}
	files, err := scaffold.RenderPlugin(scaffold.Plugin{Name: "g", Kind: "gate", API: sdk.APIVersion, Module: "example.com/g"}, src)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		if f.Name == "go.sum" && string(f.Data) != "a v1 h1:x\n"+sdk.ModulePath+" v1.2.3 h1:y\n" {
			t.Errorf("go.sum:\n%s", f.Data)
		}
	}
	if want := []string{"main.go", "main_test.go", "plugin.toml", "Makefile", "go.mod", "go.sum"}; !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
}
