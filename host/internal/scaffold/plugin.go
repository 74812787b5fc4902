package scaffold

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"text/template"

	"golang.org/x/mod/modfile"

	"github.com/sextant-dev/sextant/sdk"
)

// templates are the plugin project's files, one main and test per kind.
// They use <% %> delimiters, so the Go templates they hold stay as written.
//
//go:embed templates/*.tmpl
var templates embed.FS

// Plugin is the plugin project to write.
type Plugin struct {
	// Name is the plugin's name (sdk.ValidName), also its folder's.
	Name string
	// Kind is its sdk.Kind: navigator, provider, gate or tool.
	Kind string
	// Description goes into its manifest.
	Description string
	// API is the plugin API version its manifest declares.
	API int
	// Module is the Go module path of the project.
	Module string
}

// File is one file of a plugin project.
type File struct {
	Name string
	Data []byte
}

// WritePlugin writes the project of p into dir, creating it: main.go, a
// test, plugin.toml, a Makefile, and go.mod and go.sum requiring src's sdk
// (go.work too when src is a local sdk). A dir that exists and is not empty
// is refused (sdk.ErrInvalid).
func WritePlugin(dir string, p Plugin, src SDK) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return invalid("%s already exists and is not empty", dir)
	}
	files, err := RenderPlugin(p, src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// RenderPlugin returns the files of WritePlugin without writing them.
func RenderPlugin(p Plugin, src SDK) ([]File, error) {
	var files []File
	for _, r := range [][2]string{
		{p.Kind + ".go.tmpl", "main.go"},
		{p.Kind + "_test.go.tmpl", "main_test.go"},
		{"plugin.toml.tmpl", "plugin.toml"},
		{"Makefile.tmpl", "Makefile"},
	} {
		t, err := template.New(r[0]).Delims("<%", "%>").ParseFS(templates, "templates/"+r[0])
		if err != nil {
			return nil, fmt.Errorf("plugin template: %w", err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, p); err != nil {
			return nil, fmt.Errorf("plugin template: %w", err)
		}
		files = append(files, File{r[1], b.Bytes()})
	}
	mod, err := pluginModule(p.Module, src)
	if err != nil {
		return nil, err
	}
	return append(files, mod...), nil
}

// pluginModule writes the project's go.mod, which requires the sdk at
// src.Version and lists the sdk's own requirements (so the go command needs
// to look nothing up), and go.sum: the sdk's go.sum plus the sdk module's
// checksums when known. With a local sdk it writes a go.work too.
func pluginModule(module string, src SDK) ([]File, error) {
	sm, err := modfile.ParseLax("sdk/go.mod", src.GoMod, nil)
	if err != nil {
		return nil, fmt.Errorf("read the sdk's go.mod: %w", err)
	}
	f := new(modfile.File)
	if err := f.AddModuleStmt(module); err != nil {
		return nil, err
	}
	goVersion := ""
	if sm.Go != nil {
		goVersion = sm.Go.Version
		if err := f.AddGoStmt(goVersion); err != nil {
			return nil, err
		}
	}
	f.AddNewRequire(sdk.ModulePath, src.Version, false)
	for _, r := range sm.Require {
		f.AddNewRequire(r.Mod.Path, r.Mod.Version, true)
	}
	f.Cleanup()
	gomod, err := f.Format()
	if err != nil {
		return nil, err
	}
	files := []File{{"go.mod", gomod}, {"go.sum", slices.Concat(src.GoSum, src.Sum)}}
	if src.Dir == "" {
		return files, nil
	}
	return append(files, File{"go.work", goWork(src, goVersion)}), nil
}

// goWork is the workspace that builds the plugin against the local sdk. The
// go command still reads the go.mod of the version go.mod requires to build
// the module graph, so that version is pointed at the local sdk too (a
// go.work replace, which a plugin's go.mod never carries).
func goWork(src SDK, goVersion string) []byte {
	var w bytes.Buffer
	fmt.Fprintf(&w, "// Builds this plugin against the sdk at %s.\n// Delete this file to build against %s %s from the module proxy.\n", src.Dir, sdk.ModulePath, src.Version)
	if goVersion != "" {
		fmt.Fprintf(&w, "go %s\n", goVersion)
	}
	dir := modfile.AutoQuote(src.Dir)
	fmt.Fprintf(&w, "\nuse (\n\t.\n\t%s\n)\n\nreplace %s %s => %s\n", dir, sdk.ModulePath, src.Version, dir)
	return w.Bytes()
}
