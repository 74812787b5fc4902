package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// AddReward stores feedback on a task. It assigns the reward's sequence
// number (1, 2, … per task) and its created time (the store's clock) if
// unset. A reward aimed at a span (SpanID) or an execution must name one
// of the task's.
func (s *Store) AddReward(ctx context.Context, r *Reward) error {
	if err := checkReward(r); err != nil {
		return fmt.Errorf("add reward: %w", err)
	}
	if r.Created.IsZero() {
		r.Created = s.Now()
	}
	r.Created = r.Created.UTC()
	r.Tags = normTags(r.Tags)
	s.rewards.Lock()
	defer s.rewards.Unlock()
	err := s.update(ctx, func(txn *badger.Txn) error {
		if ok, err := exists(txn, taskKey(r.Task)); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("task %q: %w", r.Task, ErrNotFound)
			}
			return err
		}
		if r.Execution != "" {
			if ok, err := exists(txn, execKey(r.Task, r.Execution)); err != nil || !ok {
				if err == nil {
					err = fmt.Errorf("execution %q: %w", r.Execution, ErrNotFound)
				}
				return err
			}
		}
		if r.SpanID != "" {
			if err := findSpan(ctx, txn, r.Task, r.SpanID); err != nil {
				return err
			}
		}
		last, err := lastSeq(txn, rewardPrefix(r.Task))
		if err != nil {
			return err
		}
		if r.Seq == 0 {
			r.Seq = last + 1
		}
		val, err := s.encode(r)
		if err != nil {
			return err
		}
		for _, tag := range r.Tags {
			if err := txn.Set(rewardTagKey(tag, r.Task), nil); err != nil {
				return err
			}
		}
		if err := txn.Set(rewardKey(r.Task, r.Seq), val); err != nil {
			return err
		}
		return setRewardSum(ctx, txn, r, last)
	})
	if err != nil {
		return fmt.Errorf("add reward to task %q: %w", r.Task, err)
	}
	return nil
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
	err := scanTxn(ctx, txn, prefix, func(key, val []byte) error {
		if !bytes.Contains(val, needle) {
			return nil
		}
		sp, err := decodeSpan(key, val)
		if err != nil {
			return err
		}
		if sp.SpanID == spanID {
			return errFound
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
