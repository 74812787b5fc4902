package cli

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"text/template"

	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"

	"github.com/sextant-dev/sextant/sdk"
)

//go:embed templates/*.tmpl
var templates embed.FS

// modulePath is sextant's module path, which generated plugins require.
const modulePath = "github.com/sextant-dev/sextant"

// sourceRoot returns the sextant source tree this binary was built from,
// when it is still where it was built, else "".
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
sdk/sdktest, go.mod, plugin.toml and a Makefile. The project builds both to a
native go-plugin binary and to a WebAssembly module; init prints the commands.

sextant is not published as a module, so go.mod replaces it with a local
source tree: --sdk PATH, by default the tree this binary was built from.`,
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
			if sdkPath == "" {
				sdkPath = sourceRoot()
				if sdkPath == "" {
					return usageErr(errors.New("--sdk: this binary does not know where its source is; pass the path of a sextant checkout"))
				}
			}
			abs, err := filepath.Abs(sdkPath)
			if err != nil {
				return err
			}
			if module == "" {
				module = "example.com/" + name
			}
			target := filepath.Join(dir, name)
			if entries, err := os.ReadDir(target); err == nil && len(entries) > 0 {
				return usageErr(fmt.Errorf("%s already exists and is not empty", target))
			}
			files, err := renderProject(initParams{Name: name, Kind: kind, API: sdk.APIVersion,
				Description: "a " + kind + " plugin"}, module, abs)
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
			fmt.Fprintf(a.stderr, "wrote %s plugin %q in %s; build it with:\n", kind, name, target)
			fmt.Fprintf(a.stdout, "go -C %s build -o %s .\n", target, name)
			fmt.Fprintf(a.stdout, "GOOS=wasip1 GOARCH=wasm go -C %s build -buildmode=c-shared -o %s.wasm .\n", target, name)
			fmt.Fprintf(a.stdout, "make -C %s test\n", target)
			return nil
		},
	}
	c.Flags().StringVar(&kind, "kind", "", "plugin kind: navigator, provider, gate or tool (required)")
	c.Flags().StringVar(&dir, "dir", ".", "directory to create the project folder in")
	c.Flags().StringVar(&sdkPath, "sdk", "", "local sextant source tree to build against (default: this binary's source)")
	c.Flags().StringVar(&module, "module", "", "Go module path of the new project (default example.com/NAME)")
	_ = c.MarkFlagRequired("kind")
	return c
}

type projectFile struct {
	name string
	data []byte
}

func renderProject(p initParams, module, sdkRoot string) ([]projectFile, error) {
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
	gomod, gosum, err := projectModule(module, sdkRoot)
	if err != nil {
		return nil, err
	}
	return append(files, projectFile{"go.mod", gomod}, projectFile{"go.sum", gosum}), nil
}

// projectModule writes a go.mod that requires sextant through a replace to
// sdkRoot and lists sextant's own requirements, plus sextant's go.sum, so
// that a plain `go build` works offline from the module cache.
func projectModule(module, sdkRoot string) (gomod, gosum []byte, err error) {
	src := filepath.Join(sdkRoot, "go.mod")
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, nil, usageErr(fmt.Errorf("--sdk: %s is not a sextant source tree: %w", sdkRoot, errors.Unwrap(err)))
	}
	sm, err := modfile.Parse(src, data, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", src, err)
	}
	if sm.Module == nil || sm.Module.Mod.Path != modulePath {
		return nil, nil, usageErr(fmt.Errorf("--sdk: %s is not module %s", src, modulePath))
	}
	f := new(modfile.File)
	if err := f.AddModuleStmt(module); err != nil {
		return nil, nil, err
	}
	if sm.Go != nil {
		if err := f.AddGoStmt(sm.Go.Version); err != nil {
			return nil, nil, err
		}
	}
	f.AddNewRequire(modulePath, "v0.0.0-00010101000000-000000000000", false)
	for _, r := range sm.Require {
		f.AddNewRequire(r.Mod.Path, r.Mod.Version, true)
	}
	if err := f.AddReplace(modulePath, "", sdkRoot, ""); err != nil {
		return nil, nil, err
	}
	f.Cleanup()
	gomod, err = f.Format()
	if err != nil {
		return nil, nil, err
	}
	gosum, err = os.ReadFile(filepath.Join(sdkRoot, "go.sum"))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s/go.sum: %w", sdkRoot, errors.Unwrap(err))
	}
	return gomod, gosum, nil
}
