package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// A results file (sextant replay --results) is JSON lines: a header, then
// one line per result, in the order Run emits them. sextant merge reads
// the files of a sharded replay's shards and judges them together.

// ResultsHeader is the first line of a results file: what was replayed and
// how, so that a merge can check its inputs belong to one replay.
type ResultsHeader struct {
	Type       string   `json:"type"`
	Pipeline   string   `json:"pipeline"`   // absolute path
	Strategies []string `json:"strategies"` // the strategy files' text, baseline first
	Shard      string   `json:"shard,omitempty"`
	Seed       int64    `json:"seed"`
	Sample     int      `json:"sample"`
	OnMiss     string   `json:"on_miss"`
	StratifyBy string   `json:"stratify_by,omitempty"`
}

// settings is what two results files of one replay must agree on.
func (h *ResultsHeader) settings() string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%d\x00%s\x00%s", h.Pipeline, strings.Join(h.Strategies, "\x00"), h.Seed, h.Sample, h.OnMiss, h.StratifyBy)
}

// resultLine is one result line of a results file.
type resultLine struct {
	Type   string `json:"type"`
	Result Result `json:"result"`
}

// ResultsFile writes a results file. It writes beside its path and renames
// into place on Commit, so a replay that fails or is killed half-way leaves
// no partial results for a merge to judge.
type ResultsFile struct {
	path string
	f    *os.File
	w    *bufio.Writer
}

// CreateResults starts the results file at path with h's settings, the
// pipeline file pipe (recorded by its absolute path) and the strategies
// replayed, baseline first. files are the strategies' files, whose text
// is kept; "" is a strategy with no file (a pipeline without [strategy]),
// kept as it encodes.
func CreateResults(path, pipe string, files []string, strategies []*strategy.Strategy, h ResultsHeader) (*ResultsFile, error) {
	abs, err := filepath.Abs(pipe)
	if err != nil {
		return nil, err
	}
	h.Type, h.Pipeline, h.Strategies = "header", abs, nil
	for i, f := range files {
		if f == "" {
			h.Strategies = append(h.Strategies, string(strategies[i].Encode()))
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		h.Strategies = append(h.Strategies, string(b))
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	rf := &ResultsFile{path: path, f: f, w: bufio.NewWriter(f)}
	if err := rf.line(h); err != nil {
		rf.Abort()
		return nil, err
	}
	return rf, nil
}

// Add appends one result.
func (rf *ResultsFile) Add(r Result) error {
	return rf.line(resultLine{Type: "result", Result: r})
}

func (rf *ResultsFile) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if _, err := rf.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// Commit writes the file out and puts it in place.
func (rf *ResultsFile) Commit() error {
	err := rf.w.Flush()
	if err == nil {
		err = rf.f.Chmod(0o644) // as os.Create would (CreateTemp's is 0600)
	}
	if err == nil {
		err = rf.f.Sync()
	}
	if cerr := rf.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(rf.f.Name(), rf.path)
	}
	if err != nil {
		os.Remove(rf.f.Name())
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// Abort discards the file. It is safe after Commit, which it leaves be.
func (rf *ResultsFile) Abort() {
	rf.f.Close()
	os.Remove(rf.f.Name())
}

// ReadResults reads a results file: its header and its results.
func ReadResults(path string) (*ResultsHeader, []Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var h *ResultsHeader
	var out []Result
	for n := 1; sc.Scan(); n++ {
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &probe); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		switch probe.Type {
		case "header":
			if h != nil {
				return nil, nil, fmt.Errorf("%s:%d: a second header line", path, n)
			}
			h = new(ResultsHeader)
			if err := json.Unmarshal(sc.Bytes(), h); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			if len(h.Strategies) == 0 {
				return nil, nil, fmt.Errorf("%s:%d: header names no strategy", path, n)
			}
		case "result":
			if h == nil {
				return nil, nil, fmt.Errorf("%s:%d: a result before the header line", path, n)
			}
			var l resultLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			out = append(out, l.Result)
		default:
			return nil, nil, fmt.Errorf("%s:%d: unknown line type %q", path, n, probe.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if h == nil {
		return nil, nil, fmt.Errorf("%s: not a results file (no header line)", path)
	}
	return h, out, nil
}

// SortResults orders results as one unsharded replay emits them: by task,
// then in the order of strategies.
func SortResults(results []Result, strategies []*strategy.Strategy) {
	order := map[string]int{}
	for i, st := range strategies {
		order[st.Hash()] = i
	}
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].Task != results[j].Task {
			return results[i].Task < results[j].Task
		}
		return order[results[i].Hash] < order[results[j].Hash]
	})
}
