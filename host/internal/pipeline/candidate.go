package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// CandidateReplayKeys are the [replay] keys a candidate pipeline may set
// differently from the pipeline it is gated against: how its own calls
// without a recording are handled. Every other [replay] key, and [score],
// [evolve] and [[gates]], decide how a candidate is judged, so they are
// the gated pipeline's.
var CandidateReplayKeys = []string{"on_miss", "max_live_cost_usd"}

// CheckCandidate checks that cand may be gated against base: it judges
// alike (same [score], [evolve], [[gates]] and [replay], but for
// CandidateReplayKeys). Each difference is a problem at cand's line of
// the key (its overlay's, when cand is one), in an error matching
// sdk.ErrInvalid.
func CheckCandidate(base, cand *Pipeline) error {
	var diffs [][]string
	if !reflect.DeepEqual(base.Score, cand.Score) {
		diffs = append(diffs, []string{"score"})
	}
	if !reflect.DeepEqual(base.Evolve, cand.Evolve) {
		diffs = append(diffs, []string{"evolve"})
	}
	if !sameGates(base.Gates, cand.Gates) {
		diffs = append(diffs, []string{"gates"})
	}
	diffs = append(diffs, replayDiffs(base.Replay, cand.Replay)...)
	if len(diffs) == 0 {
		return nil
	}
	file := cand.File
	if cand.Overlay != "" {
		file = cand.Overlay
	}
	var ix *tomlpos.Index
	if data, err := readfile.Prefix(file, tomlpos.MaxSize+1); err == nil {
		ix, _ = tomlpos.Scan(file, data)
	}
	probs := make([]sdk.Problem, 0, len(diffs))
	for _, d := range diffs {
		line, from := ix.Line(d...), ""
		if cand.Overlay != "" && !ix.Has(d...) {
			// The overlay's own pipeline set it: point at the overlay key.
			line, from = ix.Line(keyOverlay), fmt.Sprintf(" (from %s)", cand.File)
		}
		probs = append(probs, sdk.Problem{File: file, Line: max(line, 1), Element: joinKeys(d),
			Message: fmt.Sprintf("differs from %s's%s: a candidate is judged by the gated pipeline's %s (only replay.on_miss and replay.max_live_cost_usd may differ)",
				base.File, from, joinKeys(d))})
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
	return sdk.Invalid(probs...)
}

// sameGates compares gate chains without the lines they were written at.
func sameGates(a, b []Gate) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Use != b[i].Use || !reflect.DeepEqual(a[i].Config, b[i].Config) {
			return false
		}
	}
	return true
}

// replayDiffs are the [replay] keys, but CandidateReplayKeys, whose values
// differ.
func replayDiffs(a, b Replay) [][]string {
	ma, mb := asMap(a), asMap(b)
	for _, k := range CandidateReplayKeys {
		delete(ma, k)
		delete(mb, k)
	}
	keys := map[string]bool{}
	for k := range ma {
		keys[k] = true
	}
	for k := range mb {
		keys[k] = true
	}
	var out [][]string
	for _, k := range sortedKeys(keys) {
		if !reflect.DeepEqual(ma[k], mb[k]) {
			out = append(out, []string{"replay", k})
		}
	}
	return out
}

func asMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

func joinKeys(keys []string) string {
	out := keys[0]
	for _, k := range keys[1:] {
		out += "." + k
	}
	return out
}

// Digest identifies what the pipeline runs: its effective settings
// (defaults applied; secrets never live in a pipeline) and the bytes of
// its routine, decision and rules files, hex. Two pipelines with one digest run
// a task alike under one strategy.
func (p *Pipeline) Digest() string {
	h := sha256.New()
	c := *p
	c.Gates = make([]Gate, len(p.Gates))
	for i, g := range p.Gates {
		c.Gates[i] = Gate{Use: g.Use, Config: g.Config} // not where it was written
	}
	b, err := json.Marshal(&c)
	if err != nil {
		b = fmt.Appendf(nil, "unencodable: %v", err)
	}
	h.Write(b)
	files := append([]string{p.Routine.File}, p.Routine.Decisions...)
	for _, name := range sortedKeys(p.Providers) {
		if r := p.Providers[name].Rules; r != "" {
			files = append(files, r)
		}
	}
	for _, rel := range files {
		data, err := readfile.Read(p.Path(rel), readfile.MaxRoutine)
		if err != nil {
			data = []byte(err.Error())
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00", rel, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}
