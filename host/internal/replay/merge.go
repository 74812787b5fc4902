package replay

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// Merged is a sharded replay put back together: what one unsharded replay
// of the same pipeline, strategies and settings would have produced.
type Merged struct {
	// Header is the first file's header: the pipeline (an absolute path),
	// the strategies' text and the settings, which every file shares, and
	// the candidate pipeline, recorded when every shard's live answers
	// were.
	Header *ResultsHeader
	// Strategies are the header's strategies, parsed, baseline first.
	Strategies []*strategy.Strategy
	// Results are every shard's results in the order of one replay.
	Results []Result
	// Candidate are the candidate pipeline's results, in task order, when
	// the shards are those of gate --candidate-pipeline (Header.Candidate).
	Candidate []Result
}

// MergeFiles reads the results files of the shards of one replay and puts
// them together. It checks that every shard 1..N is there exactly once,
// that all replayed the same pipeline, strategies and settings, and that
// no task was replayed twice under one strategy. Shards of gate
// --candidate-pipeline merge only with shards of the same candidate. One
// file of an unsharded replay merges too, alone. Every error is the
// input's.
func MergeFiles(files []string) (*Merged, error) {
	var header *ResultsHeader
	var results []Result
	var slots map[string]int // strategy hash → how many of the replay's strategies have it
	fileOf, count, candidate := map[string]string{}, map[string]int{}, map[string]Result{}
	shardOf := map[int]string{} // shard index → file
	total := -1
	for _, f := range files {
		rc, err := ReadResults(f)
		if err != nil {
			return nil, err
		}
		h, rs := rc.Header, rc.Results
		if header == nil {
			header = h
			if slots, err = strategySlots(files[0], h); err != nil {
				return nil, err
			}
		} else if err := sameCandidate(f, h, files[0], header); err != nil {
			return nil, err
		} else if h.settings() != header.settings() {
			return nil, fmt.Errorf("%s: replayed another pipeline, other strategies or other settings than %s", f, files[0])
		}
		i, n, err := ParseShard(h.Shard)
		if err != nil {
			return nil, fmt.Errorf("%s: header: %w", f, err)
		}
		if total >= 0 && n != total {
			return nil, fmt.Errorf("%s: shard %q does not match %s (shard %d/%d)", f, h.Shard, files[0], i+1, total)
		}
		total = n
		if h.Candidate != nil && !h.Candidate.Recorded {
			header.Candidate.Recorded = false // the merged gate's answers are kept where every shard's were
		}
		if c := h.Candidate; c != nil && !sameCost(c.ShardMaxUSD, ShardMax(c.MaxLiveCostUSD, n)) {
			return nil, fmt.Errorf("%s:1: shard %q could spend $%.4f live, not its share of max_live_cost_usd $%.4f", f, h.Shard, c.ShardMaxUSD, c.MaxLiveCostUSD)
		}
		if prev, dup := shardOf[i]; dup && n > 0 {
			return nil, fmt.Errorf("%s: shard %d/%d again (also %s)", f, i+1, n, prev)
		}
		shardOf[i] = f
		for _, r := range rs {
			// A task has one result per strategy of the replay; two
			// strategies of one content (a candidate copied from the
			// baseline) give it two results of one hash, in one file.
			key := r.Task + "\x00" + r.Hash
			if prev, dup := fileOf[key]; dup && prev != f {
				return nil, fmt.Errorf("%s: task %s replayed twice under %s (overlapping shards?)", f, r.Task, r.Strategy)
			}
			fileOf[key] = f
			if count[key]++; count[key] > max(slots[r.Hash], 1) {
				n := 0
				for _, x := range rs {
					if x.Task == r.Task && x.Hash == r.Hash {
						n++
					}
				}
				return nil, fmt.Errorf("%s: task %s replayed %d times under %s, which the replay's strategies name %d times", f, r.Task, n, r.Strategy, slots[r.Hash])
			}
			results = append(results, r)
		}
		for _, r := range rc.Candidate {
			if _, dup := candidate[r.Task]; dup {
				return nil, fmt.Errorf("%s: task %s replayed twice by the candidate pipeline (overlapping shards?)", f, r.Task)
			}
			candidate[r.Task] = r
		}
	}
	if header == nil {
		return nil, errors.New("no results file to merge")
	}
	if err := complete(files, total, shardOf); err != nil {
		return nil, err
	}
	m := &Merged{Header: header, Results: results}
	for i, text := range header.Strategies {
		st, err := strategy.Parse(fmt.Sprintf("%s: strategy %d", files[0], i+1), []byte(text))
		if err != nil {
			return nil, err
		}
		m.Strategies = append(m.Strategies, st)
	}
	SortResults(m.Results, m.Strategies)
	for _, r := range candidate {
		m.Candidate = append(m.Candidate, r)
	}
	sort.Slice(m.Candidate, func(i, j int) bool { return m.Candidate[i].Task < m.Candidate[j].Task })
	return m, nil
}

// strategySlots counts the strategies of the header h of file f by content
// hash.
func strategySlots(f string, h *ResultsHeader) (map[string]int, error) {
	slots := map[string]int{}
	for i, text := range h.Strategies {
		st, err := strategy.Parse(fmt.Sprintf("%s: strategy %d", f, i+1), []byte(text))
		if err != nil {
			return nil, err
		}
		slots[st.Hash()]++
	}
	return slots, nil
}

// sameCandidate checks that the results file f (header h) gated the
// candidate pipeline that first (header fh) did, or, like it, none.
func sameCandidate(f string, h *ResultsHeader, first string, fh *ResultsHeader) error {
	switch c, fc := h.Candidate, fh.Candidate; {
	case c == nil && fc == nil:
		return nil
	case c == nil:
		return fmt.Errorf("%s:1: a replay's results, but %s gated candidate pipeline %s: merge the shards of one gate --candidate-pipeline, and no others", f, first, fc)
	case fc == nil:
		return fmt.Errorf("%s:1: gated candidate pipeline %s, but %s is a replay's results: merge the shards of one gate --candidate-pipeline, and no others", f, c, first)
	case c.identity() != fc.identity():
		return fmt.Errorf("%s:1: gated candidate pipeline %s, but %s gated %s: shards of different candidates do not merge", f, c, first, fc)
	}
	return nil
}

// String names the candidate pipeline as merge's errors do: its file,
// digest and, when set, its base, on_miss and cap.
func (c *CandidateRef) String() string {
	s := fmt.Sprintf("%s (digest %s", c.File, short(c.Digest))
	if c.Base != "" {
		s += ", overlay of " + c.Base
	}
	s += ", on_miss " + c.OnMiss
	if c.MaxLiveCostUSD > 0 {
		s += fmt.Sprintf(", max_live_cost_usd $%.4f", c.MaxLiveCostUSD)
	}
	return s + ")"
}

// complete checks that the files are the shards 0..total-1 of one replay
// (shardOf, index → file), or one unsharded replay (total 0).
func complete(files []string, total int, shardOf map[int]string) error {
	if total == 0 && len(files) > 1 {
		return fmt.Errorf("%s: not a shard: merge combines the shards of one sharded replay", files[1])
	}
	for i := 0; i < total; i++ {
		if _, ok := shardOf[i]; !ok {
			return fmt.Errorf("shard %d/%d is missing: merge needs every shard to judge the whole", i+1, total)
		}
	}
	return nil
}

// MergeShards puts shards' results together as MergeFiles does, for shards
// replayed in one fanned-out replay (sextant replay --temporal): each task
// under each strategy exactly once, in task order, then strategy order.
func MergeShards(shards [][]Result, strategies []*strategy.Strategy) ([]Result, error) {
	known := map[string]bool{}
	for _, st := range strategies {
		known[st.Hash()] = true
	}
	seen := map[string]int{}
	var results []Result
	for i, rs := range shards {
		for _, r := range rs {
			if !known[r.Hash] {
				return nil, fmt.Errorf("shard %d/%d: task %s replayed under strategy %s, which this replay does not replay", i+1, len(shards), r.Task, r.Hash)
			}
			key := r.Task + "\x00" + r.Hash
			if prev, dup := seen[key]; dup && prev != i { // one shard holds both results of identical strategies
				return nil, fmt.Errorf("shard %d/%d: task %s replayed twice under %s (also in shard %d/%d)", i+1, len(shards), r.Task, r.Strategy, prev+1, len(shards))
			}
			seen[key] = i
			results = append(results, r)
		}
	}
	SortResults(results, strategies)
	return results, nil
}
