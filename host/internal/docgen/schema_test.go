package docgen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/scaffold"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// The JSON Schemas the reference publishes, by the format they describe:
// the bytes `sextant docs` writes (TestDocsFresh holds the committed ones
// to these).
func publishedSchemas(t *testing.T) map[string]*jsonschema.Resolved {
	t.Helper()
	specs := map[string]*schema.Block{
		"pipeline": pipeline.Spec, "strategy": strategy.Spec, "project": project.Spec,
		"plugin": plugin.ManifestSpec, "serve": pipeline.ServerSpec,
		"script": scriptRulesSpec(), "dag": dagRoutineSpec(), "chain": chainRoutineSpec(),
	}
	out := map[string]*jsonschema.Resolved{}
	for name, spec := range specs {
		var s jsonschema.Schema
		if err := json.Unmarshal(jsonSchema(name, spec), &s); err != nil {
			t.Fatalf("%s schema: %v", name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s schema: %v", name, err)
		}
		out[name] = r
	}
	return out
}

// validateTOML checks a TOML document against a JSON Schema, as an editor
// through taplo does: the document's JSON form.
func validateTOML(r *jsonschema.Resolved, data []byte) error {
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return r.Validate(v)
}

// formatOf says which schema a shipped file is checked against, or "".
func formatOf(rel string) string {
	base := filepath.Base(rel)
	switch {
	case base == "pipeline.toml":
		return "pipeline"
	case base == "sextant.toml":
		return "project"
	case base == "plugin.toml":
		return "plugin"
	case base == "serve.toml":
		return "serve"
	case base == "responses.toml":
		return "script"
	case strings.HasSuffix(base, ".dag.toml"):
		return "dag"
	case strings.HasSuffix(base, ".chain.toml"):
		return "chain"
	case base == "strategy.toml", strings.Contains(rel, "/strategies/"), strings.Contains(rel, "/candidates/"):
		return "strategy"
	}
	return ""
}

// TestShippedFilesMatchSchemas: every TOML file the repository ships as
// an example (pipelines/, the project sextant init writes, the manifest
// sextant plugins init writes) is valid against its published JSON
// Schema, so an editor never marks a file the program accepts.
func TestShippedFilesMatchSchemas(t *testing.T) {
	isolate(t)
	schemas := publishedSchemas(t)
	root := repoRoot(t)
	files := map[string][]byte{}
	for _, dir := range []string{"pipelines", "host/internal/scaffold/project"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".toml") {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			b, err := os.ReadFile(p)
			files[filepath.ToSlash(rel)] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []string{"navigator", "provider", "gate", "tool"} {
		rendered, err := scaffold.RenderPlugin(scaffold.Plugin{Name: "my-" + kind, Kind: kind, API: sdk.APIVersion,
			Description: "a " + kind + " plugin", Module: "example.com/p"}, scaffold.SDK{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rendered {
			if f.Name == plugin.ManifestFile {
				files["plugins init --kind "+kind+"/plugin.toml"] = f.Data
			}
		}
	}
	checked := map[string]int{}
	for rel, data := range files {
		if strings.Contains(rel, "/data/") {
			continue // a tool's data, not a sextant file
		}
		format := formatOf(rel)
		if format == "" {
			t.Errorf("%s: no schema says what this file is; teach formatOf", rel)
			continue
		}
		if err := validateTOML(schemas[format], data); err != nil {
			t.Errorf("%s: not valid against %s.schema.json: %v", rel, format, err)
		}
		checked[format]++
	}
	for _, format := range []string{"pipeline", "project", "plugin", "script", "dag", "chain", "strategy"} {
		if checked[format] == 0 {
			t.Errorf("no %s file checked", format)
		}
	}
}

// TestSchemaRejectsWhatTheProgramRejects: a misspelt key — in a built-in
// gate's options, in a manifest, in serve.toml — is refused by the JSON
// Schema and by the loader alike, and the same file spelt right passes both.
func TestSchemaRejectsWhatTheProgramRejects(t *testing.T) {
	isolate(t)
	schemas := publishedSchemas(t)
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"routine.chain.toml", "strategy.toml", "responses.toml"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "host/internal/scaffold/project", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, err := os.ReadFile(filepath.Join(repoRoot(t), "host/internal/scaffold/project/pipeline.toml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "g.wasm"), []byte("x"), 0o644)
	const manifest = "name = \"g\"\nkind = \"gate\"\nversion = \"1.0.0\"\napi = 1\n[wasm]\nfile = \"g.wasm\"\n"
	tests := []struct {
		name, format, file, good, bad, want string
	}{
		{"gate option", "pipeline", "pipeline.toml",
			string(base) + "\n[[gates]]\nuse = \"no-regression\"\nconfidence = 0.9\n",
			string(base) + "\n[[gates]]\nuse = \"no-regression\"\nconfidance = 0.9\n",
			`confidance: unknown key (did you mean "confidence"?)`},
		{"option of another gate", "pipeline", "pipeline.toml",
			string(base) + "\n[[gates]]\nuse = \"budget\"\nmax_cost_usd = 0.5\n",
			string(base) + "\n[[gates]]\nuse = \"budget\"\nmin_effect = 0.5\n",
			"min_effect: unknown key"},
		{"gate option type", "pipeline", "pipeline.toml",
			string(base) + "\n[[gates]]\nuse = \"human-review\"\nwhen = \"always\"\n",
			string(base) + "\n[[gates]]\nuse = \"human-review\"\nwhen = \"sometimes\"\n",
			`when: "sometimes" is not one of always, on-change, strategy`},
		{"manifest", "plugin", plugin.ManifestFile, manifest,
			strings.Replace(manifest, "[wasm]\n", "[wasm]\nsha = \"x\"\n", 1),
			`wasm.sha: unknown key (did you mean "sha256"?)`},
		{"manifest kind", "plugin", plugin.ManifestFile, manifest,
			strings.Replace(manifest, `"gate"`, `"gaet"`, 1),
			`kind: unknown kind "gaet"`},
		{"serve", "serve", "serve.toml", "[proxy]\nreplay = true\n", "[proxy]\nreplya = true\n",
			`proxy.replya: unknown key (did you mean "replay"?)`},
	}
	load := map[string]func(path string) error{
		"pipeline": func(p string) error { _, err := pipeline.Load(ctx, p, nil, pipeline.Options{}); return err },
		"plugin":   func(p string) error { _, err := plugin.ReadManifest(p); return err },
		"serve":    func(p string) error { _, err := pipeline.LoadServer(ctx, p, nil, pipeline.Options{}); return err },
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			for _, doc := range []string{tc.good, tc.bad} {
				if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
				schemaErr, loadErr := validateTOML(schemas[tc.format], []byte(doc)), load[tc.format](path)
				if doc == tc.good {
					if schemaErr != nil || loadErr != nil {
						t.Fatalf("the right spelling: schema %v, loader %v", schemaErr, loadErr)
					}
					continue
				}
				if schemaErr == nil {
					t.Errorf("the JSON Schema accepts what the loader refuses (%v)", loadErr)
				}
				if loadErr == nil || !strings.Contains(loadErr.Error(), tc.want) {
					t.Errorf("loader: %v, want %q", loadErr, tc.want)
				}
			}
		})
	}
}
