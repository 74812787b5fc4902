package pipeline

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// keyOverlay is the top-level key that makes a pipeline file an overlay:
// it names the pipeline file the overlay changes.
const keyOverlay = "overlay"

// loadOverlay loads the overlay at path, whose document raw l parsed: the
// pipeline it names, with raw's tables merged over that pipeline's (see
// merge). The named pipeline's own problems are reported in its file; the
// merged pipeline's at the overlay's line of the key when the overlay
// wrote it, else at the named pipeline's.
func loadOverlay(l *loader, path string, raw map[string]any) (*Pipeline, error) {
	ref, ok := raw[keyOverlay].(string)
	if !ok || ref == "" {
		l.add([]string{keyOverlay}, "want the path of the pipeline file this one changes, got %s", describeValue(raw[keyOverlay]))
		return nil, sdk.Invalid(l.c.Problems()...)
	}
	basePath := ref
	if !filepath.IsAbs(ref) {
		basePath = filepath.Join(filepath.Dir(path), filepath.FromSlash(ref))
	}
	data, err := readfile.Prefix(basePath, tomlpos.MaxSize+1)
	if err != nil {
		l.add([]string{keyOverlay}, "%s: %v", ref, errors.Unwrap(err))
		return nil, sdk.Invalid(l.c.Problems()...)
	}
	bix, err := tomlpos.Scan(basePath, data)
	if err != nil {
		return nil, err
	}
	b := &loader{ctx: l.ctx, res: l.res, opts: l.opts, c: &schema.Checker{File: basePath, Index: bix}}
	braw, ok := b.parse(data)
	if !ok {
		return nil, sdk.Invalid(b.c.Problems()...)
	}
	if _, nested := braw[keyOverlay]; nested {
		// One level only: a chain of overlays would hide which file
		// set a value, and could loop.
		l.add([]string{keyOverlay}, "%s is an overlay itself: name a pipeline that is not one", ref)
		return nil, sdk.Invalid(l.c.Problems()...)
	}
	// The named pipeline's own schema problems belong to its file.
	own := deepCopy(braw).(map[string]any)
	b.interpolate(own, nil)
	b.c.Check(own, Spec, nil)
	if probs := b.c.Problems(); len(probs) > 0 {
		return nil, sdk.Invalid(probs...)
	}
	delete(raw, keyOverlay)
	merged := merge(braw, raw)
	p, ok := l.decode(basePath, merged, Spec)
	if !ok {
		return nil, sdk.Invalid(place(l.c.Problems(), path, l.c.Index, basePath, bix)...)
	}
	p.Overlay = path
	if probs := l.finish(p); len(probs) > 0 {
		return nil, sdk.Invalid(place(probs, path, l.c.Index, basePath, bix)...)
	}
	return p, nil
}

// merge merges over into base, in place: a table merges key by key, any
// other value (a string, a number, a list, an array of tables) replaces
// base's whole. It returns base.
func merge(base, over map[string]any) map[string]any {
	for k, v := range over {
		if sub, ok := v.(map[string]any); ok {
			if was, ok := base[k].(map[string]any); ok {
				base[k] = merge(was, sub)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// place moves the problems an overlay's checker found at keys the
// overlay does not write, but its base does, to the base's file and
// line; then orders them overlay first.
func place(probs []sdk.Problem, overlay string, oix *tomlpos.Index, base string, bix *tomlpos.Index) []sdk.Problem {
	for i, p := range probs {
		if p.File != overlay || p.Element == "" {
			continue
		}
		keys := splitElement(p.Element)
		if !oix.Has(keys...) && bix.Has(keys...) {
			probs[i].File, probs[i].Line = base, bix.Line(keys...)
		}
	}
	sort.SliceStable(probs, func(i, j int) bool {
		a, b := probs[i], probs[j]
		if (a.File == overlay) != (b.File == overlay) {
			return a.File == overlay
		}
		return a.File == b.File && a.Line < b.Line
	})
	return probs
}

// splitElement reads a key path as schema.Join writes it
// (steps.classify.provider, gates[1].use) back into its keys.
func splitElement(el string) []string {
	var out []string
	for _, part := range strings.Split(el, ".") {
		name, rest, _ := strings.Cut(part, "[")
		out = append(out, name)
		for rest != "" {
			var ix string
			ix, rest, _ = strings.Cut(rest, "]")
			out = append(out, ix)
			rest = strings.TrimPrefix(rest, "[")
		}
	}
	return out
}

// describeValue names the TOML type (and a scalar's value) of v.
func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		return "an empty string"
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("number %v", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case map[string]any:
		return "a table"
	}
	return "an array"
}
