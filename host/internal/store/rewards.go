package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// AddReward stores feedback on a task. It assigns the reward's sequence
// number (1, 2, … per task) and its created time (the store's clock) if
// unset. A reward aimed at a span (SpanID) or an execution must name one
// of the task's.
func (s *Store) AddReward(ctx context.Context, r *Reward) error {
	return s.AddRewards(ctx, []*Reward{r})
}

// AddRewards stores several rewards, as AddReward does, in one
// transaction: all of them or none (one feedback on several dimensions).
func (s *Store) AddRewards(ctx context.Context, rs []*Reward) error {
	for _, r := range rs {
		if err := checkReward(r); err != nil {
			return fmt.Errorf("add reward: %w", err)
		}
	}
	now := s.Now()
	s.rewards.Lock()
	defer s.rewards.Unlock()
	done := make([]Reward, len(rs))
	err := s.update(ctx, func(txn *badger.Txn) error {
		for i, r := range rs {
			var err error
			if done[i], err = s.addReward(ctx, txn, *r, now); err != nil {
				return fmt.Errorf("add reward to task %q: %w", r.Task, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, r := range rs {
		*r = done[i]
	}
	return nil
}

// addReward writes r in txn and returns it as written (sequence number
// and created time set); the caller's reward changes only once the
// transaction commits, so a retried transaction starts afresh.
func (s *Store) addReward(ctx context.Context, txn *badger.Txn, r Reward, now time.Time) (Reward, error) {
	if r.Created.IsZero() {
		r.Created = now
	}
	r.Created = r.Created.UTC()
	r.Tags = normTags(r.Tags)
	if ok, err := exists(txn, taskKey(r.Task)); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("task %q: %w", r.Task, ErrNotFound)
		}
		return r, err
	}
	if r.Execution != "" {
		if ok, err := exists(txn, execKey(r.Task, r.Execution)); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("execution %q: %w", r.Execution, ErrNotFound)
			}
			return r, err
		}
	}
	if r.SpanID != "" {
		if err := findSpan(ctx, txn, r.Task, r.SpanID); err != nil {
			return r, err
		}
	}
	last, err := lastSeq(txn, rewardPrefix(r.Task))
	if err != nil {
		return r, err
	}
	if r.Seq == 0 {
		r.Seq = last + 1
	}
	val, err := s.encode(&r)
	if err != nil {
		return r, err
	}
	for _, tag := range r.Tags {
		if err := txn.Set(rewardTagKey(tag, r.Task), nil); err != nil {
			return r, err
		}
	}
	if err := txn.Set(rewardKey(r.Task, r.Seq), val); err != nil {
		return r, err
	}
	return r, setRewardSum(ctx, txn, &r, last)
}

func checkReward(r *Reward) error {
	if err := validID("task id", r.Task); err != nil {
		return err
	}
	if r.Execution != "" {
		if err := validID("execution id", r.Execution); err != nil {
			return err
		}
	}
	if r.SpanID != "" {
		if err := validHexID("span id", r.SpanID, 8); err != nil {
			return err
		}
	}
	if r.Dimension != "" {
		if err := ValidDimension(r.Dimension); err != nil {
			return err
		}
	}
	if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
		return invalidf("reward value %v is not a finite number", r.Value)
	}
	for _, tag := range r.Tags {
		if err := validLabel("tag", tag); err != nil {
			return err
		}
	}
	return nil
}

// findSpan checks that one of the task's spans has the given id.
func findSpan(ctx context.Context, txn *badger.Txn, task, spanID string) error {
	prefix := taskSub(task, subSpan)
	needle := []byte(`"span_id":"` + spanID + `"`)
	errFound := errors.New("found")
	// A span entry leaves out a derived span id (layout 6): per
	// execution, the seqs that would derive spanID, whose entry (the
	// first whose key's seq reaches one) is read.
	var exec string
	var seqs []uint64
	err := scanTxn(ctx, txn, prefix, func(key, val []byte) error {
		look := bytes.Contains(val, needle)
		if _, sub, ok := parseTaskSub(key); ok {
			if e, last, ok := parseSpanSub(sub); ok {
				if e != exec || seqs == nil {
					exec, seqs = e, derivedSeqs(spanID, spanIDBase(task, e))
				}
				for i, seq := range seqs {
					if seq != 0 && seq <= last {
						look, seqs[i] = true, 0 // 0 is no seq: looked at
					}
				}
			}
		}
		if !look {
			return nil
		}
		spans, err := appendDecodedSpans(nil, key, val)
		if err != nil {
			return err
		}
		for _, sp := range spans {
			if sp.SpanID == spanID {
				return errFound
			}
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("span %s: %w", spanID, ErrNotFound)
}

// lastSeq returns the largest 8-byte big-endian suffix under prefix.
func lastSeq(txn *badger.Txn, prefix []byte) (uint64, error) {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Reverse = true
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	it.Seek(append(slices.Clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	if !it.ValidForPrefix(prefix) {
		return 0, nil
	}
	k := it.Item().Key()
	if len(k) != len(prefix)+8 {
		return 0, fmt.Errorf("bad key %s", printableKey(k))
	}
	return binary.BigEndian.Uint64(k[len(prefix):]), nil
}

// Rewards reads a task's rewards in the order they were given.
func (s *Store) Rewards(ctx context.Context, task string) ([]Reward, error) {
	if err := validID("task id", task); err != nil {
		return nil, fmt.Errorf("read rewards: %w", err)
	}
	var out []Reward
	err := s.scan(ctx, rewardPrefix(task), func(key, val []byte) error {
		var r Reward
		if err := decode(key, val, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read rewards of task %q: %w", task, err)
	}
	return out, nil
}

// ValidDimension checks a reward dimension's name: a letter, then letters,
// digits, '_' or '-', at most 64 bytes — a name that reads the same in a
// flag (--reward safety=1), a gate metric (reward.safety), an OTLP
// attribute (sextant.reward.safety) and a JSON key.
func ValidDimension(name string) error {
	if name == "" || len(name) > 64 {
		return invalidf("reward dimension %q: want 1 to 64 bytes", name)
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-'):
		default:
			return invalidf("reward dimension %q: want a letter, then letters, digits, '_' or '-'", name)
		}
	}
	return nil
}

// DimensionStat is the count and the sum of one dimension's rewards.
type DimensionStat struct {
	N   int     `json:"n"`
	Sum float64 `json:"sum"`
}

// Mean is the dimension's mean reward (0 without rewards).
func (d DimensionStat) Mean() float64 {
	if d.N == 0 {
		return 0
	}
	return d.Sum / float64(d.N)
}

// Dimensions adds up rewards per named dimension (the unnamed one is
// left out: the task summary keeps it). Nil when none is named.
func Dimensions(rewards []Reward) map[string]DimensionStat {
	var out map[string]DimensionStat
	for _, r := range rewards {
		if r.Dimension == "" {
			continue
		}
		if out == nil {
			out = map[string]DimensionStat{}
		}
		d := out[r.Dimension]
		d.N++
		d.Sum += r.Value
		out[r.Dimension] = d
	}
	return out
}

// DimensionStats reads a task's named reward dimensions from its reward
// records (a task has few), for listing filters and metrics.
func (s *Store) DimensionStats(ctx context.Context, task string) (map[string]DimensionStat, error) {
	rs, err := s.Rewards(ctx, task)
	if err != nil {
		return nil, err
	}
	return Dimensions(rs), nil
}
