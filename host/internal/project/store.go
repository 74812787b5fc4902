package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The store rule, the same for every command (RATIONALE "Why one store rule for every command"):
//
//  1. --store DIR
//  2. $SEXTANT_STORE
//  3. the store key of sextant.toml, found by walking up from the working
//     directory as git finds .git (relative to that file)
//  4. the pipeline's store: [store] dir (default .sextant) beside the
//     pipeline the command runs, or the one named by --pipeline
//  5. for commands about recorded tasks with no pipeline: ./.sextant when it
//     exists; otherwise an error that lists what was looked at and the
//     stores below the working directory, with the command to run
//
// Only commands that record new things (run, import, evolve) create a store.

// EnvStore is the environment variable of rule 2.
const EnvStore = "SEXTANT_STORE"

// DefaultStore is the store directory when no rule names another: beside
// a pipeline, or in the working directory.
const DefaultStore = ".sextant"

// StoreSource says which rule found a store.
type StoreSource int

// The rules, in the order they are tried.
const (
	FromFlag     StoreSource = iota // --store
	FromEnv                         // $SEXTANT_STORE
	FromProject                     // sextant.toml's store key
	FromPipeline                    // the pipeline's [store] dir
	FromCwd                         // ./.sextant
)

// StoreLoc is a located store: its directory, as the user would type it,
// and the rule that found it.
type StoreLoc struct {
	Dir  string
	From StoreSource
}

// NeedsFlag reports whether a follow-up command run from the same
// directory needs --store Dir to reach this store: one found by the
// environment, the project file or the working directory is found again,
// and so is a pipeline's default store when the pipeline is here.
func (l StoreLoc) NeedsFlag() bool {
	switch l.From {
	case FromEnv, FromProject, FromCwd:
		return false
	case FromPipeline:
		return filepath.Clean(l.Dir) != DefaultStore
	}
	return true
}

// CommonStore applies rules 1–3 to flag, the command's --store; ok is
// false when none of them named a store. An invalid sextant.toml is an
// error matching sdk.ErrInvalid.
func CommonStore(flag string) (_ StoreLoc, ok bool, _ error) {
	if flag != "" {
		return StoreLoc{flag, FromFlag}, true, nil
	}
	if d := os.Getenv(EnvStore); d != "" {
		return StoreLoc{d, FromEnv}, true, nil
	}
	pf, err := Find(".")
	if err != nil {
		return StoreLoc{}, false, err
	}
	if pf != nil && pf.Store != "" {
		return StoreLoc{RelToCwd(pf.StoreDir()), FromProject}, true, nil
	}
	return StoreLoc{}, false, nil
}

// PipelineStore is rule 4: the store dir of a pipeline's [store] table
// ("" = .sextant), as the user would type it: beside the pipeline file
// as it was named on the command line.
func PipelineStore(pipelineFile, dir string) string {
	if dir == "" {
		dir = DefaultStore
	}
	if filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join(filepath.Dir(pipelineFile), dir)
}

// CwdStore is rule 5: ./.sextant when it exists.
func CwdStore() (StoreLoc, bool) {
	if info, err := os.Stat(DefaultStore); err == nil && info.IsDir() {
		return StoreLoc{DefaultStore, FromCwd}, true
	}
	return StoreLoc{}, false
}

// NoStore explains that no store was found: what was looked at (with
// --pipeline when the command has that flag), which stores lie below the
// working directory, and the command to run; rerun is the command line
// again with --store DIR added.
func NoStore(withPipeline bool, rerun func(dir string) string) error {
	cwd, _ := os.Getwd()
	var b strings.Builder
	b.WriteString("no store found; looked at --store (not given), $" + EnvStore + " (not set), ")
	fmt.Fprintf(&b, "%s (none in %s or above), ", FileName, cwd)
	if withPipeline {
		b.WriteString("--pipeline (not given), ")
	}
	b.WriteString("./" + DefaultStore + " (absent)")
	found := StoresBelow(".", 3, 2000)
	if len(found) == 0 {
		b.WriteString("\nrun a pipeline first (sextant run PIPELINE), or pass --store DIR")
	} else {
		b.WriteString("\nstores below this directory: " + strings.Join(found, ", "))
		b.WriteString("\nrun: " + rerun(found[0]))
	}
	return errors.New(b.String())
}

// StoresBelow lists the .sextant directories under root, at most depth
// levels down, looking at no more than limit directories; hidden folders
// other than .sextant (and node_modules, vendor) are not entered.
func StoresBelow(root string, depth, limit int) []string {
	var out []string
	seen := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if seen++; seen > limit {
			return filepath.SkipAll
		}
		if p == root {
			return nil
		}
		name := d.Name()
		if name == DefaultStore {
			out = append(out, p)
			return filepath.SkipDir
		}
		if strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" ||
			strings.Count(filepath.ToSlash(p), "/") >= depth {
			return filepath.SkipDir
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// RelToCwd shows an absolute path relative to the working directory when
// it lies below it.
func RelToCwd(p string) string {
	cwd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(cwd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
