package temporal_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/sdk"
)

// writeChain writes a one-step chain pipeline called name as file, with
// extra appended to its TOML; its routine lies in routines/, where a
// worker does not look for pipelines.
func writeChain(t *testing.T, file, name, extra string) {
	t.Helper()
	dir := filepath.Dir(file)
	if err := os.MkdirAll(filepath.Join(dir, "routines"), 0o755); err != nil {
		t.Fatal(err)
	}
	chain := "name = \"" + name + "\"\n\n[[steps]]\nid = \"s1\"\noutputs = [\"n\"]\n"
	body := "name = \"" + name + "\"\n[routine]\nnavigator = \"chain\"\nfile = \"routines/" + name + ".toml\"\n[steps.s1]\nkind = \"expr\"\nset = { n = \"1\" }\n" + extra
	for f, b := range map[string]string{filepath.Join(dir, "routines", name+".toml"): chain, file: body} {
		if err := os.WriteFile(f, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadPipelines: a worker runs every pipeline of its folder, by name;
// a folder that is missing or holds no pipeline, two pipelines of one
// name and a bad redact pattern are invalid input.
func TestLoadPipelines(t *testing.T) {
	ctx := context.Background()
	rec := temporal.StoreSink(openStore(t))
	prep := func(ctx context.Context, path string) (*run.Prepared, error) {
		return run.Prepare(ctx, path, registry(t), quiet())
	}
	dir := t.TempDir()
	writeChain(t, filepath.Join(dir, "a", "pipeline.toml"), "alpha", "")
	writeChain(t, filepath.Join(dir, "beta.toml"), "beta", "[store]\nredact = [\"sk-[a-z]+\"]\n")
	m, closeAll, err := temporal.LoadPipelines(ctx, dir, rec, prep, quiet())
	if err != nil {
		t.Fatal(err)
	}
	closeAll(ctx)
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Fatalf("pipelines %q, want alpha and beta", got)
	}

	writeChain(t, filepath.Join(dir, "gamma.toml"), "alpha", "")
	bad := t.TempDir()
	writeChain(t, filepath.Join(bad, "r.toml"), "redacting", "[store]\nredact = [\"(\"]\n")
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "absent"), "--pipelines: stat "},
		{t.TempDir(), "no pipeline (*/pipeline.toml or *.toml)"},
		{dir, `pipeline "alpha" again`},
		{bad, "store.redact[0]: bad regular expression"},
	} {
		_, _, err := temporal.LoadPipelines(ctx, c.dir, rec, prep, quiet())
		if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid-input error containing %q", c.dir, err, c.want)
		}
	}
}
