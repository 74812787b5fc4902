package cli

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"text/template"

	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/sextant-dev/sextant/sdk"
)

//go:embed templates/*.tmpl
var templates embed.FS

// sourceRoot returns the sextant source tree this binary was built from,
// when it is still where it was built, else "". A binary installed from a
// module proxy has none: its module's files carry no sdk/.
func sourceRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "sdk", "plugin.go")); err != nil {
		return ""
	}
	return root
}

// sdkRelease is the published sdk version this binary was built with, and
// that module's checksum, as the build recorded them. ok is false for a
// build from a checkout, whose sdk is the workspace's source (version
// "(devel)"), and for test binaries, which record no dependencies.
func sdkRelease() (version, sum string, ok bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", "", false
	}
	for _, d := range bi.Deps {
		if d.Path == sdk.ModulePath && d.Replace == nil && semver.IsValid(d.Version) {
			return d.Version, d.Sum, true
		}
	}
	return "", "", false
}

type initParams struct {
	Name, Kind, Description string
	API                     int
}

func (a *app) pluginsInitCommand() *cobra.Command {
	var kind, dir, sdkPath, module string
	c := &cobra.Command{
		Use:   "init --kind navigator|provider|gate|tool NAME",
		Short: "Write a ready-to-build plugin project",
		Long: `init writes DIR/NAME/: main.go (one sdk import and a small main), a test using
sdk/sdktest, go.mod, go.sum, plugin.toml and a Makefile. The project builds both
to a native go-plugin binary and to a WebAssembly module; init prints the
commands.

go.mod requires one module, github.com/sextant-dev/sextant/sdk, at the version
this sextant was built with, and never replaces it. A sextant installed with
go install ...@VERSION writes a project that builds from the module proxy
alone. To build against a local sextant checkout instead (a sextant built from
one does so by default), pass --sdk PATH: init then also writes a go.work that
uses PATH/sdk. Delete go.work to build against the published sdk again.`,
		Example: `  sextant plugins init --kind gate pii-gate
  sextant plugins init --kind tool word-tools
  sextant plugins init --kind navigator --dir ~/src --sdk ~/src/sextant my-nav`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !sdk.ValidName(name) {
				return usageErr(fmt.Errorf("plugin name %q: want lowercase words joined by - or _", name))
			}
			if !sdk.Kind(kind).Valid() {
				return usageErr(fmt.Errorf("--kind: %q is not navigator, provider, gate or tool", kind))
			}
			if module == "" {
				module = "example.com/" + name
			}
			target := filepath.Join(dir, name)
			if entries, err := os.ReadDir(target); err == nil && len(entries) > 0 {
				return usageErr(fmt.Errorf("%s already exists and is not empty", target))
			}
			src, err := sdkSource(sdkPath)
			if err != nil {
				return err
			}
			files, err := renderProject(initParams{Name: name, Kind: kind, API: sdk.APIVersion,
				Description: "a " + kind + " plugin"}, module, src)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(target, f.name), f.data, 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.stderr, "wrote %s plugin %q in %s (sdk %s", kind, name, target, src.version)
			if src.dir != "" {
				fmt.Fprintf(a.stderr, ", built from %s through go.work", src.dir)
			}
			fmt.Fprintln(a.stderr, "); build it with:")
			fmt.Fprintf(a.stdout, "go -C %s build -o %s .\n", target, name)
			fmt.Fprintf(a.stdout, "GOOS=wasip1 GOARCH=wasm go -C %s build -buildmode=c-shared -o %s.wasm .\n", target, name)
			fmt.Fprintf(a.stdout, "make -C %s test\n", target)
			return nil
		},
	}
	c.Flags().StringVar(&kind, "kind", "", "plugin kind: navigator, provider, gate or tool (required)")
	c.Flags().StringVar(&dir, "dir", ".", "directory to create the project folder in")
	c.Flags().StringVar(&sdkPath, "sdk", "", "local sextant checkout to build against through a go.work (default: none for a released sextant, this binary's source tree otherwise)")
	c.Flags().StringVar(&module, "module", "", "Go module path of the new project (default example.com/NAME)")
	_ = c.MarkFlagRequired("kind")
	return c
}

// sdkFiles says which sdk a new plugin builds against.
type sdkFiles struct {
	// version is the sdk version go.mod requires.
	version string
	// goMod and goSum are that sdk's go.mod and go.sum.
	goMod, goSum []byte
	// sum is the go.sum line pair for the sdk module itself, when known.
	sum []byte
	// dir is the local sdk module the go.work points at; "" for none.
	dir string
}

// sdkSource decides what a new plugin builds against: the local checkout at
// checkout when set; else the published sdk this binary was built with;
// else (a build from a checkout) the checkout it was built from.
func sdkSource(checkout string) (sdkFiles, error) {
	version, sum, released := sdkRelease()
	if checkout == "" && released {
		goMod, goSum := sdk.ModuleFiles()
		f := sdkFiles{version: version, goMod: goMod, goSum: goSum}
		if sum != "" {
			modSum, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(goMod)), nil
			})
			if err != nil {
				return sdkFiles{}, err
			}
			f.sum = fmt.Appendf(nil, "%s %s %s\n%s %s/go.mod %s\n", sdk.ModulePath, version, sum, sdk.ModulePath, version, modSum)
		}
		return f, nil
	}
	if checkout == "" {
		if checkout = sourceRoot(); checkout == "" {
			return sdkFiles{}, usageErr(errors.New("--sdk: this sextant was built from a checkout that is no longer where it was built; pass the path of a sextant checkout"))
		}
	}
	root, err := filepath.Abs(checkout)
	if err != nil {
		return sdkFiles{}, err
	}
	f := sdkFiles{dir: filepath.Join(root, "sdk")}
	notCheckout := func(err error) error {
		return usageErr(fmt.Errorf("--sdk: %s is not a sextant checkout: %w", checkout, err))
	}
	name := filepath.Join(f.dir, "go.mod")
	if f.goMod, err = os.ReadFile(name); err != nil {
		return sdkFiles{}, notCheckout(errors.Unwrap(err))
	}
	if mf, err := modfile.ParseLax(name, f.goMod, nil); err != nil {
		return sdkFiles{}, notCheckout(err)
	} else if mf.Module == nil || mf.Module.Mod.Path != sdk.ModulePath {
		return sdkFiles{}, notCheckout(fmt.Errorf("%s is not module %s", name, sdk.ModulePath))
	}
	if f.goSum, err = os.ReadFile(filepath.Join(f.dir, "go.sum")); err != nil {
		return sdkFiles{}, notCheckout(errors.Unwrap(err))
	}
	if released {
		f.version = version
		return f, nil
	}
	// A build from a checkout: the version is the one the checkout's host
	// module requires, which is what the next release publishes.
	name = filepath.Join(root, "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return sdkFiles{}, notCheckout(errors.Unwrap(err))
	}
	mf, err := modfile.ParseLax(name, data, nil)
	if err != nil {
		return sdkFiles{}, notCheckout(err)
	}
	for _, r := range mf.Require {
		if r.Mod.Path == sdk.ModulePath {
			f.version = r.Mod.Version
		}
	}
	if f.version == "" {
		return sdkFiles{}, notCheckout(fmt.Errorf("%s does not require %s", name, sdk.ModulePath))
	}
	return f, nil
}

type projectFile struct {
	name string
	data []byte
}

func renderProject(p initParams, module string, src sdkFiles) ([]projectFile, error) {
	var files []projectFile
	render := func(tmpl, out string) error {
		t, err := template.New(tmpl).Delims("<%", "%>").ParseFS(templates, "templates/"+tmpl)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, p); err != nil {
			return err
		}
		files = append(files, projectFile{out, b.Bytes()})
		return nil
	}
	for _, r := range [][2]string{
		{p.Kind + ".go.tmpl", "main.go"},
		{p.Kind + "_test.go.tmpl", "main_test.go"},
		{"plugin.toml.tmpl", "plugin.toml"},
		{"Makefile.tmpl", "Makefile"},
	} {
		if err := render(r[0], r[1]); err != nil {
			return nil, err
		}
	}
	mod, err := projectModule(module, src)
	if err != nil {
		return nil, err
	}
	return append(files, mod...), nil
}

// projectModule writes the project's go.mod, which requires the sdk at
// src.version and lists the sdk's own requirements (so the go command needs
// to look nothing up), and go.sum: the sdk's go.sum plus the sdk module's
// checksums when known. With a local sdk it writes a go.work too.
func projectModule(module string, src sdkFiles) ([]projectFile, error) {
	sm, err := modfile.ParseLax("sdk/go.mod", src.goMod, nil)
	if err != nil {
		return nil, fmt.Errorf("read the sdk's go.mod: %w", err)
	}
	f := new(modfile.File)
	if err := f.AddModuleStmt(module); err != nil {
		return nil, usageErr(fmt.Errorf("--module: %w", err))
	}
	goVersion := ""
	if sm.Go != nil {
		goVersion = sm.Go.Version
		if err := f.AddGoStmt(goVersion); err != nil {
			return nil, err
		}
	}
	f.AddNewRequire(sdk.ModulePath, src.version, false)
	for _, r := range sm.Require {
		f.AddNewRequire(r.Mod.Path, r.Mod.Version, true)
	}
	f.Cleanup()
	gomod, err := f.Format()
	if err != nil {
		return nil, err
	}
	files := []projectFile{{"go.mod", gomod}, {"go.sum", append(src.goSum, src.sum...)}}
	if src.dir == "" {
		return files, nil
	}
	// The workspace uses the local sdk. The go command still reads the go.mod
	// of the version go.mod requires to build the module graph, so that
	// version is pointed at the local sdk too (a go.work replace, which a
	// plugin's go.mod never carries).
	var w bytes.Buffer
	fmt.Fprintf(&w, "// Builds this plugin against the sdk at %s.\n// Delete this file to build against %s %s from the module proxy.\n", src.dir, sdk.ModulePath, src.version)
	if goVersion != "" {
		fmt.Fprintf(&w, "go %s\n", goVersion)
	}
	dir := modfile.AutoQuote(src.dir)
	fmt.Fprintf(&w, "\nuse (\n\t.\n\t%s\n)\n\nreplace %s %s => %s\n", dir, sdk.ModulePath, src.version, dir)
	return append(files, projectFile{"go.work", w.Bytes()}), nil
}
