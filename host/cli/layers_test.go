package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const layersMod = "github.com/sextant-dev/sextant"

// linkers are the packages outside host/internal/builtins allowed to
// import a first-party navigator or plugin, each with its reason. Test
// files are never checked: a test may link what it exercises.
var linkers = map[string]string{
	layersMod + "/host/internal/tools/gen-email-triage":  "dev tool: generates the email-triage example's recordings with the BPMN navigator itself",
	layersMod + "/host/internal/tools/gen-support-agent": "dev tool: generates the support-agent example's recordings with the chain navigator and records provider",
}

type listedPkg struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// listPackages lists every package of the host module and of the sdk
// module (go.work joins them) with its imports and dependencies, leaving
// test files out of Imports and Deps.
func listPackages(t *testing.T) map[string]*listedPkg {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles,Imports,Deps,TestImports,XTestImports,Error", "./...", "./sdk/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]*listedPkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs[p.ImportPath] = &p
	}
	for _, want := range []string{layersMod + "/host/cli", layersMod + "/host/internal/run", layersMod + "/host/internal/builtins",
		layersMod + "/host/internal/temporal", layersMod + "/host/internal/serve", layersMod + "/sdk", layersMod + "/navigators/bpmn"} {
		if pkgs[want] == nil {
			t.Fatalf("go list found no %s: the checks below would hold vacuously", want)
		}
	}
	return pkgs
}

// implementation reports whether path is a first-party navigator or plugin
// (or a library of theirs, such as FEEL and DMN): code the host reaches
// through the plugin registry, not by import.
func implementation(path string) bool {
	return strings.HasPrefix(path, layersMod+"/navigators/") || strings.HasPrefix(path, layersMod+"/plugins/")
}

// TestLayers checks that the layers do not leak: only the SDK is public,
// the run engine reaches navigators and plugins through the registry, and
// one package links them in.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	paths := make([]string, 0, len(pkgs))
	for p := range pkgs {
		paths = append(paths, p)
	}
	slices.Sort(paths)

	t.Run("run engine imports no navigator or plugin", func(t *testing.T) {
		for _, d := range pkgs[layersMod+"/host/internal/run"].Deps {
			if implementation(d) {
				t.Errorf("host/internal/run depends on %s: reach it through sdk.Registered or a Config field (sdk.EventSemantics, sdk.RulesChecker)", d)
			}
		}
	})

	t.Run("only builtins links navigators and plugins", func(t *testing.T) {
		for _, path := range paths {
			p := pkgs[path]
			if implementation(path) || path == layersMod+"/host/internal/builtins" || linkers[path] != "" {
				continue
			}
			for _, imp := range p.Imports {
				if implementation(imp) {
					t.Errorf("%s imports %s: only host/internal/builtins links first-party navigators and plugins (or add it to linkers with a reason)", path, imp)
				}
			}
		}
		for path := range linkers {
			if pkgs[path] == nil {
				t.Errorf("linkers names %s, which no longer exists", path)
			}
		}
	})

	t.Run("builtins links every first-party plugin", func(t *testing.T) {
		b := pkgs[layersMod+"/host/internal/builtins"]
		for _, path := range paths {
			p := pkgs[path]
			if !implementation(path) || !registers(t, p) {
				continue
			}
			if !slices.Contains(b.Imports, path) {
				t.Errorf("%s registers a plugin (sdk.Register) but host/internal/builtins does not import it", path)
			}
		}
	})

	t.Run("temporal does not depend on serve", func(t *testing.T) {
		for _, d := range pkgs[layersMod+"/host/internal/temporal"].Deps {
			if d == layersMod+"/host/internal/serve" || strings.HasPrefix(d, layersMod+"/host/internal/serve/") {
				t.Errorf("host/internal/temporal depends on %s", d)
			}
		}
	})

	t.Run("sdk imports nothing of the host module", func(t *testing.T) {
		for _, path := range paths {
			if path != layersMod+"/sdk" && !strings.HasPrefix(path, layersMod+"/sdk/") {
				continue
			}
			p := pkgs[path]
			for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
				if strings.HasPrefix(imp, layersMod+"/") && imp != layersMod+"/sdk" && !strings.HasPrefix(imp, layersMod+"/sdk/") {
					t.Errorf("%s imports %s: the sdk is its own module and must build alone", path, imp)
				}
			}
		}
	})
}

// registers reports whether p's non-test files call sdk.Register: it is a
// plugin the host links in.
func registers(t *testing.T, p *listedPkg) bool {
	t.Helper()
	for _, f := range p.GoFiles {
		b, err := os.ReadFile(filepath.Join(p.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("sdk.Register(")) {
			return true
		}
	}
	return false
}

// TestCLISize keeps host/cli a thin layer: flag parsing, one call into
// the layers below, printing. Its non-test Go files total at most
// maxCLILines lines, and no function in them is longer than maxFuncLines
// (cobra builders keep their RunE bodies in small methods).
func TestCLISize(t *testing.T) {
	// The cap: 3 000 lines in host/cli's non-test Go files, 60 in a function.
	const maxCLILines, maxFuncLines = 3000, 60
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(src, []byte("\n"))
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			from, to := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := to.Line - from.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines (at most %d)", f, from.Line, fn.Name.Name, n, maxFuncLines)
			}
		}
	}
	if total > maxCLILines {
		t.Errorf("host/cli's non-test Go files hold %d lines (at most %d)", total, maxCLILines)
	}
}
