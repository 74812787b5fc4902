// Package modproxy publishes modules from source trees into a file-system
// Go module proxy, the layout GOPROXY=file://DIR serves:
// <module>/@v/list, <version>.info, <version>.mod and <version>.zip. The
// release test uses it to install sextant the way users do, with
// `go install github.com/sextant-dev/sextant/cmd/sextant@VERSION`, from the
// working tree and before anything is tagged.
package modproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// Module is one module to publish.
type Module struct {
	// Dir is the module's root folder, which holds its go.mod.
	Dir string
	// Version is the semantic version to publish it as.
	Version string
	// GoMod and GoSum, when not nil, are published instead of Dir's go.mod
	// and go.sum: a release pins its sibling module's version in them.
	GoMod, GoSum []byte
}

// Published is what Publish wrote.
type Published struct {
	// Path and Version name the module.
	Path, Version string
	// Sum and ModSum are its go.sum hashes: of the zip and of the go.mod.
	Sum, ModSum string
}

// SumLines returns the two go.sum lines for p.
func (p Published) SumLines() string {
	return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", p.Path, p.Version, p.Sum, p.Path, p.Version, p.ModSum)
}

// Publish writes m into the proxy rooted at root. The zip holds the files
// git would commit (tracked, or untracked and not ignored) under m.Dir,
// less what module zips always leave out (nested modules, vendor trees);
// outside a git work tree it holds every file. Publishing a version again
// replaces it.
func Publish(root string, m Module) (Published, error) {
	goMod := m.GoMod
	if goMod == nil {
		var err error
		if goMod, err = os.ReadFile(filepath.Join(m.Dir, "go.mod")); err != nil {
			return Published{}, err
		}
	}
	mf, err := modfile.ParseLax("go.mod", goMod, nil)
	if err != nil {
		return Published{}, err
	}
	if mf.Module == nil {
		return Published{}, fmt.Errorf("%s: go.mod has no module line", m.Dir)
	}
	mv := module.Version{Path: mf.Module.Mod.Path, Version: m.Version}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return Published{}, err
	}
	files, err := sourceFiles(m.Dir)
	if err != nil {
		return Published{}, err
	}
	override := map[string][]byte{"go.mod": goMod}
	if m.GoSum != nil {
		override["go.sum"] = m.GoSum
	}
	for i, f := range files {
		if data, ok := override[f.Path()]; ok {
			files[i] = dataFile{f.Path(), data}
			delete(override, f.Path())
		}
	}
	for name, data := range override {
		files = append(files, dataFile{name, data})
	}

	escPath, err := module.EscapePath(mv.Path)
	if err != nil {
		return Published{}, err
	}
	escVer, err := module.EscapeVersion(mv.Version)
	if err != nil {
		return Published{}, err
	}
	dir := filepath.Join(root, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Published{}, err
	}
	base := filepath.Join(dir, escVer)
	var zb bytes.Buffer
	if err := zip.Create(&zb, mv, files); err != nil {
		return Published{}, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{mv.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return Published{}, err
	}
	for ext, data := range map[string][]byte{".zip": zb.Bytes(), ".mod": goMod, ".info": info} {
		if err := os.WriteFile(base+ext, data, 0o644); err != nil {
			return Published{}, err
		}
	}
	if err := addToList(filepath.Join(dir, "list"), mv.Version); err != nil {
		return Published{}, err
	}

	p := Published{Path: mv.Path, Version: mv.Version}
	if p.Sum, err = dirhash.HashZip(base+".zip", dirhash.Hash1); err != nil {
		return Published{}, err
	}
	p.ModSum, err = dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(goMod)), nil
	})
	return p, err
}

// addToList adds version to the proxy's version list file unless present.
func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if slices.Contains(strings.Fields(string(data)), version) {
		return nil
	}
	return os.WriteFile(name, append(data, version+"\n"...), 0o644)
}

// sourceFiles lists the regular files under dir that belong in its module:
// what `git ls-files --cached --others --exclude-standard` names when dir is
// in a git work tree (so build outputs, test binaries and node_modules stay
// out), else everything but VCS folders. A tracked file deleted from the
// work tree is left out.
func sourceFiles(dir string) ([]zip.File, error) {
	var names []string
	out, err := exec.Command("git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err == nil {
		for n := range strings.SplitSeq(string(out), "\x00") {
			if n != "" {
				names = append(names, n)
			}
		}
	} else {
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == ".hg" || d.Name() == ".svn") {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					return err
				}
				names = append(names, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(names)
	names = slices.Compact(names) // ls-files names a conflicted file once per stage
	var files []zip.File
	for _, n := range names {
		full := filepath.Join(dir, filepath.FromSlash(n))
		info, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if info.Mode().IsRegular() {
			files = append(files, diskFile{path.Clean(n), full, info})
		}
	}
	return files, nil
}

// diskFile is a zip.File read from disk.
type diskFile struct {
	name, full string
	info       fs.FileInfo
}

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.full) }

// dataFile is a zip.File held in memory.
type dataFile struct {
	name string
	data []byte
}

func (f dataFile) Path() string                 { return f.name }
func (f dataFile) Lstat() (fs.FileInfo, error)  { return dataInfo{f}, nil }
func (f dataFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type dataInfo struct{ f dataFile }

func (i dataInfo) Name() string       { return path.Base(i.f.name) }
func (i dataInfo) Size() int64        { return int64(len(i.f.data)) }
func (i dataInfo) Mode() fs.FileMode  { return 0o644 }
func (i dataInfo) ModTime() time.Time { return time.Time{} }
func (i dataInfo) IsDir() bool        { return false }
func (i dataInfo) Sys() any           { return nil }
