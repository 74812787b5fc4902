// Package project finds and reads a sextant project file, sextant.toml: the
// one place a checkout says where its store is, so that every command run
// anywhere below it uses the same store. It is found as git finds .git, by
// walking up from the working directory.
//
// The package only reads; it never creates a file or a store.
package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// FileName is the project file's name.
const FileName = "sextant.toml"

// KeyStore is the project file's store key.
const KeyStore = "store"

// Spec declares the project file's keys; it drives validation and the
// reference docs.
var Spec = &schema.Block{Name: "project", Fields: []schema.Field{
	{Name: KeyStore, Type: schema.String, Doc: "store directory for every command run in this directory or below, relative to sextant.toml"},
}}

// File is a loaded project file.
type File struct {
	// Path is the file's path; Dir its directory.
	Path, Dir string
	// Store is the store directory as written (relative to Dir unless
	// absolute); empty when the file does not set it.
	Store string
	// StoreLine is the line of the store key (0 when absent).
	StoreLine int
}

// StoreDir returns the store directory the file names, resolved against
// the file's directory, or "" when it names none.
func (f *File) StoreDir() string {
	if f.Store == "" {
		return ""
	}
	if filepath.IsAbs(f.Store) {
		return f.Store
	}
	return filepath.Join(f.Dir, f.Store)
}

// Find looks for sextant.toml in dir and each of its parents and loads the
// first one found. It returns nil and no error when there is none. An
// invalid file is an error matching sdk.ErrInvalid, positioned at its line.
func Find(dir string) (*File, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", FileName, err)
	}
	for d := abs; ; {
		p := filepath.Join(d, FileName)
		info, err := os.Stat(p)
		switch {
		case err == nil && info.Mode().IsRegular():
			return Load(p)
		case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("find %s: %w", FileName, err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, nil
		}
		d = parent
	}
}

// Load reads the project file at path.
func Load(path string) (*File, error) {
	data, err := readfile.Prefix(path, tomlpos.MaxSize+1)
	if err != nil {
		return nil, sdk.Invalid(sdk.Problem{File: path, Message: fmt.Sprintf("read project file: %v", errors.Unwrap(err))})
	}
	ix, err := tomlpos.Scan(path, data)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		p := sdk.Problem{File: path, Message: strings.TrimPrefix(err.Error(), "toml: ")}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			p.Line, p.Message = pe.Position.Line, pe.Message
		}
		return nil, sdk.Invalid(p)
	}
	c := &schema.Checker{File: path, Index: ix}
	c.Check(raw, Spec, nil)
	if s, ok := raw[KeyStore].(string); ok && strings.TrimSpace(s) == "" {
		c.Add([]string{KeyStore}, "empty (leave the key out to use the default)")
	}
	if probs := c.Problems(); len(probs) > 0 {
		return nil, sdk.Invalid(probs...)
	}
	f := &File{Path: path, Dir: filepath.Dir(path)}
	f.Store, _ = raw[KeyStore].(string)
	f.StoreLine = ix.Line(KeyStore)
	return f, nil
}
