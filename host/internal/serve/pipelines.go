package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
)

// Discovered is what DiscoverPipelines found under a --pipelines
// directory.
type Discovered struct {
	// Pipelines are the pipelines, in file order (DIR/NAME/pipeline.toml,
	// then DIR/*.toml).
	Pipelines []*pipeline.Pipeline
	// Skipped name the TOML files that are not pipelines (a serve.toml or
	// sextant.toml kept beside them), each with why.
	Skipped []string
}

// DiscoverPipelines loads the pipelines under dir: DIR/NAME/pipeline.toml
// and DIR/*.toml. A TOML file with no name, [routine] or [steps] is not a
// pipeline (a server's or project's configuration kept beside
// them): it is skipped and named in Skipped. Every problem of the files
// that are pipelines is reported at once; two pipelines of one name are
// an error.
func DiscoverPipelines(dir string) (*Discovered, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("serve: --pipelines: %w", err)
	}
	var files []string
	for _, pat := range []string{"*/pipeline.toml", "*.toml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	out := &Discovered{}
	names := map[string]string{}
	var problems []string
	for _, f := range files {
		if why, skip := notPipeline(f); skip {
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s: %s", f, why))
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		p, err := pipeline.Load(context.Background(), abs, nil, pipeline.Options{})
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if prev, dup := names[p.Name]; dup {
			problems = append(problems, fmt.Sprintf("%s: pipeline %q again (also %s)", f, p.Name, prev))
			continue
		}
		names[p.Name] = p.File
		out.Pipelines = append(out.Pipelines, p)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("serve: --pipelines %s:\n%s", dir, strings.Join(problems, "\n"))
	}
	return out, nil
}

// notPipeline reports whether the TOML file f is plainly not a pipeline:
// it parses and has none of a pipeline's name, routine and steps. A file that does not
// parse is left to the pipeline loader, which says where it is wrong.
func notPipeline(f string) (string, bool) {
	b, err := os.ReadFile(f)
	if err != nil {
		return "", false
	}
	var top map[string]any
	if _, err := toml.Decode(string(b), &top); err != nil {
		return "", false
	}
	for _, k := range []string{"name", "routine", "steps"} {
		if _, ok := top[k]; ok {
			return "", false
		}
	}
	return "not a pipeline (no name, [routine] or [steps]), skipped", true
}
