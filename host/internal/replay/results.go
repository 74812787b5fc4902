package replay

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// A results file (sextant replay --results) is JSON lines: a header, then
// one line per result, in the order Run emits them, then an end line that
// counts them and holds the SHA-256 of every line before it. sextant merge
// reads the files of a sharded replay's shards and judges them together.
// A shard of gate --candidate-pipeline names its candidate in the header
// and writes the candidate pipeline's results as "candidate" lines beside
// the baseline's "result" lines: the two replays run one strategy, so the
// strategy hash cannot tell them apart.

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
	// Candidate is the candidate pipeline of gate --candidate-pipeline;
	// nil for a replay of strategies.
	Candidate *CandidateRef `json:"candidate,omitempty"`
}

// CandidateRef is what identifies the candidate pipeline a results file
// of gate --candidate-pipeline replayed, and how its calls could go live.
type CandidateRef struct {
	// File is the candidate pipeline's file as it was given (reported).
	File string `json:"file"`
	// Digest is its effective content's (pipeline.Pipeline.Digest): the
	// shards of one gate replayed the same candidate when theirs agree.
	Digest string `json:"digest"`
	// Base is the pipeline an overlay changes, absolute; "" for a full
	// candidate pipeline.
	Base string `json:"base,omitempty"`
	// OnMiss is the candidate's on_miss; MaxLiveCostUSD its
	// max_live_cost_usd, the cap of the whole gate, and ShardMaxUSD the
	// part of it this shard could spend (MaxLiveCostUSD / shards).
	OnMiss         string  `json:"on_miss"`
	MaxLiveCostUSD float64 `json:"max_live_cost_usd,omitempty"`
	ShardMaxUSD    float64 `json:"shard_max_live_cost_usd,omitempty"`
	// Recorded says the answers of its live calls were kept.
	Recorded bool `json:"recorded,omitempty"`
}

// identity is what the shards of one candidate's gate agree on.
func (c *CandidateRef) identity() string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%g", c.Digest, c.Base, c.OnMiss, c.MaxLiveCostUSD)
}

// ShardMax is the part of max (max_live_cost_usd; 0: no cap) that each
// of shards (0: unsharded) may spend: an equal share, so that the shards
// together never spend more than the whole gate could.
func ShardMax(max float64, shards int) float64 {
	if shards <= 1 {
		return max
	}
	return max / float64(shards)
}

// settings is what two results files of one replay must agree on.
func (h *ResultsHeader) settings() string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%d\x00%s\x00%s", h.Pipeline, strings.Join(h.Strategies, "\x00"), h.Seed, h.Sample, h.OnMiss, h.StratifyBy)
}

// The types of a results file's lines.
const (
	lineHeader    = "header"
	lineResult    = "result"
	lineCandidate = "candidate"
	lineEnd       = "end"
)

// resultLine is one result line of a results file.
type resultLine struct {
	Type   string `json:"type"`
	Result Result `json:"result"`
}

// endLine is a results file's last line: how many results it holds, the
// candidate pipeline's live calls and their cost, and the SHA-256 (hex) of
// every line before it, so that a file cut short or changed after its
// replay wrote it is refused rather than judged.
type endLine struct {
	Type        string  `json:"type"`
	Results     int     `json:"results"`
	LiveCalls   int     `json:"live_calls,omitempty"`
	LiveCostUSD float64 `json:"live_cost_usd,omitempty"`
	SHA256      string  `json:"sha256"`
}

// ResultsFile writes a results file. It writes beside its path and renames
// into place on Commit, so a replay that fails or is killed half-way leaves
// no partial results for a merge to judge.
type ResultsFile struct {
	path string
	f    *os.File
	w    *bufio.Writer
	sum  hash.Hash
	end  endLine
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
	h.Type, h.Pipeline, h.Strategies = lineHeader, abs, nil
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
	// Written through a symlink; never renamed over a pipe or a device
	// (/dev/null as root would become a regular file).
	path = readfile.Target(path)
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, sdk.Errorf(sdk.CodeInvalid, "results: %s is not a regular file: merge reads the results from a file", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	rf := &ResultsFile{path: path, f: f, w: bufio.NewWriter(f), sum: sha256.New(), end: endLine{Type: lineEnd}}
	if err := rf.line(h); err != nil {
		rf.Abort()
		return nil, err
	}
	return rf, nil
}

// Add appends one result.
func (rf *ResultsFile) Add(r Result) error {
	rf.end.Results++
	return rf.line(resultLine{Type: lineResult, Result: r})
}

// AddCandidate appends one result of the candidate pipeline (a file of
// gate --candidate-pipeline), counting its live calls.
func (rf *ResultsFile) AddCandidate(r Result) error {
	rf.end.Results++
	for _, c := range r.Live {
		rf.end.LiveCalls++
		rf.end.LiveCostUSD += c.CostUSD
	}
	return rf.line(resultLine{Type: lineCandidate, Result: r})
}

func (rf *ResultsFile) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	b = append(b, '\n')
	rf.sum.Write(b)
	if _, err := rf.w.Write(b); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// Commit writes the end line and the file out, and puts it in place.
func (rf *ResultsFile) Commit() error {
	rf.end.SHA256 = hex.EncodeToString(rf.sum.Sum(nil))
	b, err := json.Marshal(rf.end)
	if err == nil {
		_, err = rf.w.Write(append(b, '\n'))
	}
	if err == nil {
		err = rf.w.Flush()
	}
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

// ResultsContent is a results file read: its header, its results (the
// "result" lines) and, in a file of gate --candidate-pipeline, the
// candidate pipeline's (the "candidate" lines).
type ResultsContent struct {
	Header             *ResultsHeader
	Results, Candidate []Result
}

// ReadResults reads the results file at path. It checks the end line
// against the lines before it: a file whose end line is missing (cut
// short: refused when its header names a candidate pipeline, whose live
// calls it counts) or disagrees is refused, at the line that shows it.
func ReadResults(path string) (*ResultsContent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	rd := resultsReader{path: path, sum: sha256.New(), out: &ResultsContent{}}
	for n := 1; sc.Scan(); n++ {
		if err := rd.line(n, sc.Bytes()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rd.finish()
}

// resultsReader is ReadResults' state between lines.
type resultsReader struct {
	path string
	sum  hash.Hash // of the lines before the end line
	end  *endLine
	live struct {
		calls int
		cost  float64
	}
	out *ResultsContent
}

func (rd *resultsReader) line(n int, b []byte) error {
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return fmt.Errorf("%s:%d: %v", rd.path, n, err)
	}
	if rd.end != nil {
		return fmt.Errorf("%s:%d: a line after the end line", rd.path, n)
	}
	h := rd.out.Header
	switch probe.Type {
	case lineHeader:
		if h != nil {
			return fmt.Errorf("%s:%d: a second header line", rd.path, n)
		}
		h = new(ResultsHeader)
		if err := json.Unmarshal(b, h); err != nil {
			return fmt.Errorf("%s:%d: %v", rd.path, n, err)
		}
		if len(h.Strategies) == 0 {
			return fmt.Errorf("%s:%d: header names no strategy", rd.path, n)
		}
		if h.Candidate != nil && len(h.Strategies) != 2 {
			return fmt.Errorf("%s:%d: header names a candidate pipeline and %d strategies, want 2 (the pipeline's and the candidate's)", rd.path, n, len(h.Strategies))
		}
		rd.out.Header = h
	case lineResult, lineCandidate:
		if h == nil {
			return fmt.Errorf("%s:%d: a result before the header line", rd.path, n)
		}
		if probe.Type == lineCandidate && h.Candidate == nil {
			return fmt.Errorf("%s:%d: a candidate pipeline's result, but the header names no candidate pipeline", rd.path, n)
		}
		var l resultLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("%s:%d: %v", rd.path, n, err)
		}
		if probe.Type == lineResult {
			rd.out.Results = append(rd.out.Results, l.Result)
			break
		}
		rd.out.Candidate = append(rd.out.Candidate, l.Result)
		for _, c := range l.Result.Live {
			rd.live.calls++
			rd.live.cost += c.CostUSD
		}
	case lineEnd:
		if h == nil {
			return fmt.Errorf("%s:%d: the end line before the header line", rd.path, n)
		}
		rd.end = new(endLine)
		if err := json.Unmarshal(b, rd.end); err != nil {
			return fmt.Errorf("%s:%d: %v", rd.path, n, err)
		}
		return rd.checkEnd(n)
	default:
		return fmt.Errorf("%s:%d: unknown line type %q", rd.path, n, probe.Type)
	}
	rd.sum.Write(b)
	rd.sum.Write([]byte{'\n'})
	return nil
}

// checkEnd checks the end line (line n) against the lines before it.
func (rd *resultsReader) checkEnd(n int) error {
	e := rd.end
	if got := hex.EncodeToString(rd.sum.Sum(nil)); got != e.SHA256 {
		return fmt.Errorf("%s:%d: the lines above have sha256 %s, the end line says %s: the file was changed after its replay wrote it",
			rd.path, n, short(got), short(e.SHA256))
	}
	if got := len(rd.out.Results) + len(rd.out.Candidate); got != e.Results {
		return fmt.Errorf("%s:%d: the end line counts %d results, the file holds %d", rd.path, n, e.Results, got)
	}
	if rd.live.calls != e.LiveCalls || !sameCost(rd.live.cost, e.LiveCostUSD) {
		return fmt.Errorf("%s:%d: the end line counts %d live calls costing $%.4f, the results %d costing $%.4f",
			rd.path, n, e.LiveCalls, e.LiveCostUSD, rd.live.calls, rd.live.cost)
	}
	return nil
}

func (rd *resultsReader) finish() (*ResultsContent, error) {
	h := rd.out.Header
	if h == nil {
		return nil, fmt.Errorf("%s: not a results file (no header line)", rd.path)
	}
	if rd.end == nil && h.Candidate != nil {
		return nil, fmt.Errorf("%s: no end line: the file is cut short (a shard that did not finish, or a partial copy)", rd.path)
	}
	if c := h.Candidate; c != nil && c.ShardMaxUSD > 0 && rd.live.cost > c.ShardMaxUSD && !sameCost(rd.live.cost, c.ShardMaxUSD) {
		return nil, fmt.Errorf("%s: live calls cost $%.4f, over the shard's cap $%.4f", rd.path, rd.live.cost, c.ShardMaxUSD)
	}
	return rd.out, nil
}

// sameCost reports whether two sums of one set of costs agree (floating
// point: summed in another order, they may differ in the last bits).
func sameCost(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) }

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
