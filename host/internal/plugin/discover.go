package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/sdk"
)

// Checksum states shown by `sextant plugins list`.
const (
	ChecksumOK       = "ok"
	ChecksumMismatch = "mismatch"
	ChecksumUnpinned = "unpinned"
	ChecksumBuiltin  = "builtin"
)

// Entry is one plugin the registry can resolve.
type Entry struct {
	Name        string
	Kind        sdk.Kind
	Version     string
	Description string
	Transport   string // builtin | wasm | process
	// Source is the manifest path, or "builtin".
	Source string
	// Checksum is ok, mismatch, unpinned or builtin.
	Checksum string
	// Shadows lists the sources of same-named plugins later in the search
	// path (and builtins) that this entry hides.
	Shadows []string
	// Manifest is nil for builtins.
	Manifest *Manifest
	// Builtin is the linked-in plugin, nil otherwise.
	Builtin sdk.Plugin
}

// SearchPath returns the plugin directories to search, in order: the given
// flags, $SEXTANT_PLUGIN_PATH (list separated by the OS path separator),
// ./plugins beside the pipeline (when pipelineDir is not ""), and
// $XDG_DATA_HOME/sextant/plugins (or ~/.local/share/sextant/plugins).
func SearchPath(flags []string, pipelineDir string) []string {
	var dirs []string
	dirs = append(dirs, flags...)
	if env := os.Getenv("SEXTANT_PLUGIN_PATH"); env != "" {
		for _, d := range filepath.SplitList(env) {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	if pipelineDir != "" {
		dirs = append(dirs, filepath.Join(pipelineDir, "plugins"))
	}
	data := os.Getenv("XDG_DATA_HOME")
	if data == "" {
		if home, err := os.UserHomeDir(); err == nil {
			data = filepath.Join(home, ".local", "share")
		}
	}
	if data != "" {
		dirs = append(dirs, filepath.Join(data, "sextant", "plugins"))
	}
	return dirs
}

// Discover reads every plugin folder under dirs (each dir holds one folder
// per plugin) and merges the builtins. The first match of a name wins;
// later same-named plugins are recorded in the winner's Shadows. Two
// plugins with one name in the same directory are a clash. Every bad
// manifest and clash is returned, each error naming the file; the entries
// that are fine are still returned.
func Discover(dirs []string, builtins []sdk.Plugin) ([]Entry, error) {
	var (
		entries []Entry
		byName  = map[string]int{}
		errs    []error
		seen    = map[string]bool{}
	)
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err == nil && seen[abs] {
			continue
		}
		seen[abs] = true
		subs, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read plugin dir %s: %w", dir, errors.Unwrap(err)))
			continue
		}
		inDir := map[string]string{}
		for _, sub := range subs {
			if !sub.IsDir() {
				continue
			}
			path := filepath.Join(dir, sub.Name(), ManifestFile)
			if _, err := os.Stat(path); err != nil {
				continue // a folder without a manifest is not a plugin
			}
			m, err := ReadManifest(path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if prev, dup := inDir[m.Name]; dup {
				errs = append(errs, sdk.Invalid(sdk.Problem{File: path, Line: 1, Element: "name",
					Message: fmt.Sprintf("plugin name %q clashes with %s", m.Name, prev)}))
				continue
			}
			inDir[m.Name] = path
			e := Entry{Name: m.Name, Kind: m.Kind, Version: m.Version, Description: m.Description,
				Transport: m.Transport(), Source: path, Checksum: checksumState(m), Manifest: m}
			if i, ok := byName[m.Name]; ok {
				entries[i].Shadows = append(entries[i].Shadows, path)
				continue
			}
			byName[m.Name] = len(entries)
			entries = append(entries, e)
		}
	}
	for _, p := range builtins {
		info := p.Describe()
		if i, ok := byName[info.Name]; ok {
			entries[i].Shadows = append(entries[i].Shadows, TransportBuiltin)
			continue
		}
		byName[info.Name] = len(entries)
		entries = append(entries, Entry{Name: info.Name, Kind: info.Kind, Version: info.Version,
			Description: info.Description, Transport: TransportBuiltin, Source: TransportBuiltin,
			Checksum: ChecksumBuiltin, Builtin: p})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries, errors.Join(errs...)
}

func checksumState(m *Manifest) string {
	want := m.Artifact().SHA256
	if want == "" {
		return ChecksumUnpinned
	}
	got, err := FileSHA256(m.ArtifactPath())
	if err != nil || got != want {
		return ChecksumMismatch
	}
	return ChecksumOK
}

// FileSHA256 returns the hex sha256 of the file at path.
func FileSHA256(path string) (string, error) { return readfile.SHA256(path) }

// VerifyChecksum checks the artifact against the manifest's pin, returning
// an error naming the plugin and both sums on a mismatch.
func VerifyChecksum(m *Manifest) error {
	want := m.Artifact().SHA256
	if want == "" {
		return nil
	}
	got, err := FileSHA256(m.ArtifactPath())
	if err != nil {
		return fmt.Errorf("plugin %q: %w", m.Name, err)
	}
	if got != want {
		return &sdk.Error{Code: sdk.CodeInvalid, Message: fmt.Sprintf("%s: plugin %q: sha256 mismatch (manifest %s…, file %s…)",
			m.Path, m.Name, short(want), short(got))}
	}
	return nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// Pin writes the artifact's sha256 into an unpinned manifest and returns it.
func Pin(m *Manifest) (string, error) {
	sum, err := FileSHA256(m.ArtifactPath())
	if err != nil {
		return "", fmt.Errorf("pin plugin %q: %w", m.Name, err)
	}
	data, err := os.ReadFile(m.Path)
	if err != nil {
		return "", fmt.Errorf("pin plugin %q: %w", m.Name, err)
	}
	out, err := setSHA256(string(data), m.Transport(), sum)
	if err != nil {
		return "", fmt.Errorf("pin plugin %q: %s: %w", m.Name, m.Path, err)
	}
	if err := replaceFile(m.Path, []byte(out)); err != nil {
		return "", fmt.Errorf("pin plugin %q: %w", m.Name, err)
	}
	m.Artifact().SHA256 = sum
	return sum, nil
}

// replaceFile replaces the file at path with b, keeping its mode, through
// a synced temporary file in the same directory and a rename: a crash
// leaves the old manifest or the new one, never a truncated one (a
// manifest that no longer parses would take its plugin away).
func replaceFile(path string, b []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	err = errors.Join(werr, f.Chmod(info.Mode().Perm()), f.Sync(), f.Close())
	if err == nil {
		failpoint.Hit(failpoint.PluginPinWritten)
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// setSHA256 sets sha256 in the [section] of a manifest's text, keeping
// everything else (comments, order) as it was.
func setSHA256(text, section, sum string) (string, error) {
	lines := strings.Split(text, "\n")
	in := false
	header := -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			in = t == "["+section+"]"
			if in {
				header = i
			}
			continue
		}
		if in && (strings.HasPrefix(t, "sha256 ") || strings.HasPrefix(t, "sha256=")) {
			lines[i] = fmt.Sprintf("sha256 = %q", sum)
			return strings.Join(lines, "\n"), nil
		}
	}
	if header < 0 {
		return "", fmt.Errorf("no [%s] section", section)
	}
	lines = append(lines[:header+1], append([]string{fmt.Sprintf("sha256 = %q", sum)}, lines[header+1:]...)...)
	return strings.Join(lines, "\n"), nil
}
