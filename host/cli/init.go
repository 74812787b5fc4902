package cli

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// projectFiles is the project sextant init writes: a pipeline that runs
// offline at once, with its routine, strategy, scripted answers, inputs, a
// dataset stub, a CI workflow and the project file.
//
//go:embed all:project
var projectFiles embed.FS

func (a *app) initCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a ready project: pipeline, routine, strategy, scripted provider, inputs, CI workflow",
		Long: `init writes a sextant project into DIR (default: the current directory):
a pipeline (pipeline.toml) with a chain routine, a strategy, the scripted
provider's answers (responses.toml, so it runs offline with no API key), two
example inputs, an empty dataset for CI (dataset.jsonl), a GitHub Actions
workflow that gates a candidate strategy with sharded replays
(.github/workflows/sextant.yml) and sextant.toml, which keeps the store in
DIR/.sextant for every command run below DIR.

init never overwrites: when any of its files exists, it writes nothing and
names them (exit 2).`,
		Example: `  sextant init support && cd support
  sextant run pipeline.toml --input inputs/refund.json --truth '{"action":"refund"}'
  sextant replay pipeline.toml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			files, err := writeProject(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote %d files in %s:\n", len(files), dir)
			for _, f := range files {
				fmt.Fprintf(a.stdout, "  %s\n", f)
			}
			run := "sextant run pipeline.toml --input inputs/refund.json --truth '{\"action\":\"refund\"}'"
			if dir != "." {
				run = "cd " + shellQuote(dir) + " && " + run
			}
			fmt.Fprintf(a.stdout, "next: %s\n", run)
			return nil
		},
	}
}

// writeProject writes the project files into dir, creating it. When any
// file exists it writes nothing and names every one that does.
func writeProject(dir string) ([]string, error) {
	var files []string
	err := fs.WalkDir(projectFiles, "project", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, strings.TrimPrefix(p, "project/"))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	sort.Strings(files)
	if info, err := os.Stat(dir); err == nil && !info.IsDir() {
		return nil, withInvalid(fmt.Errorf("init %s: not a directory", dir))
	}
	var exist []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f))); err == nil {
			exist = append(exist, f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, withInvalid(fmt.Errorf("init %s: %w", dir, err))
		}
	}
	if len(exist) > 0 {
		return nil, withInvalid(fmt.Errorf("init %s: would overwrite %s; nothing written (init a new or empty directory)", dir, strings.Join(exist, ", ")))
	}
	for _, f := range files {
		data, err := projectFiles.ReadFile(path.Join("project", f))
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		// O_EXCL: a file that appeared since the check is not overwritten.
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		if _, err := out.Write(data); err != nil {
			out.Close()
			return nil, fmt.Errorf("init: %w", err)
		}
		if err := out.Close(); err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
	}
	return files, nil
}
