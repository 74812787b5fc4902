package store

import (
	"bytes"
	"context"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Tree reads a task and everything beneath it in one range scan:
// executions in id order, each with its spans in sequence order and its
// latest checkpoint, then the task's rewards and recording links.
func (s *Store) Tree(ctx context.Context, id string) (*Tree, error) {
	if err := validID("task id", id); err != nil {
		return nil, fmt.Errorf("read task: %w", err)
	}
	if d := s.lostFor(taskPrefix(id)); d != nil {
		return nil, fmt.Errorf("read task %q: %w", id, d)
	}
	var tr *Tree
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		tr, err = readTree(ctx, txn, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read task %q: %w", id, err)
	}
	s.effective(&tr.Task)
	return tr, nil
}

// Head reads a task with its executions (their Trace, but no spans and no
// checkpoints), rewards and recording links: what a replay needs, without
// decoding every span.
func (s *Store) Head(ctx context.Context, id string) (*Tree, error) {
	if err := validID("task id", id); err != nil {
		return nil, fmt.Errorf("read task: %w", err)
	}
	if d := s.lostFor(taskPrefix(id)); d != nil {
		return nil, fmt.Errorf("read task %q: %w", id, d)
	}
	var tr *Tree
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		tr, err = readTreeOpt(ctx, txn, id, false)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read task %q: %w", id, err)
	}
	s.effective(&tr.Task)
	return tr, nil
}

func readTree(ctx context.Context, txn *badger.Txn, id string) (*Tree, error) {
	return readTreeOpt(ctx, txn, id, true)
}

func readTreeOpt(ctx context.Context, txn *badger.Txn, id string, bodies bool) (*Tree, error) {
	tr := &Tree{}
	found := false
	byExec := map[string]int{}
	execIndex := func(exec string) (int, error) {
		i, ok := byExec[exec]
		if !ok {
			return 0, fmt.Errorf("data for execution %q, which does not exist", exec)
		}
		return i, nil
	}
	skip := func(key []byte) bool {
		if bodies {
			return false
		}
		_, sub, ok := parseTaskSub(key)
		return ok && (sub[0] == subSpan || sub[0] == subCheckpoint)
	}
	merged := false // a link entry named more than its key's recording
	err := scanTxnSkip(ctx, txn, taskPrefix(id), skip, func(key, val []byte) error {
		_, sub, ok := parseTaskSub(key)
		if !ok {
			return fmt.Errorf("bad key %s", printableKey(key))
		}
		switch sub[0] {
		case subTask:
			found = true
			return decode(key, val, &tr.Task)
		case subBody:
			raw, err := bodyValue(key, bytes.Clone(val), true)
			if err != nil {
				return err
			}
			switch bodyField(sub) {
			case bodyInput:
				tr.Task.Input = raw
			case bodyTruth:
				tr.Task.Truth = raw
			default:
				return fmt.Errorf("unknown key %s", printableKey(key))
			}
		case subExec:
			var f folded
			if err := decodeTreeExec(key, val, id, &f); err != nil {
				return err
			}
			byExec[f.ID] = len(tr.Executions)
			et := ExecutionTree{Execution: f.Execution}
			if bodies {
				et.Checkpoint = f.Checkpoint // a t/k entry, later in the scan, replaces it
			}
			tr.Executions = append(tr.Executions, et)
			if len(f.Links) > 0 {
				merged = true
				tr.Recordings = append(tr.Recordings, f.Links...)
			}
		case subLink:
			merged = merged || len(val) > 0
			var err error
			tr.Recordings, err = appendLinks(tr.Recordings, key, sub, val)
			return err
		case subCheckpoint:
			var c Checkpoint
			if err := decode(key, val, &c); err != nil {
				return err
			}
			i, err := execIndex(c.Execution)
			if err != nil {
				return err
			}
			tr.Executions[i].Checkpoint = &c
		case subReward:
			var r Reward
			if err := decode(key, val, &r); err != nil {
				return err
			}
			tr.Rewards = append(tr.Rewards, r)
		case subSpan:
			exec, _, ok := parseSpanSub(sub)
			if !ok {
				return fmt.Errorf("bad span key %s", printableKey(key))
			}
			i, err := execIndex(exec)
			if err != nil {
				return err
			}
			tr.Executions[i].Spans, err = appendDecodedSpans(tr.Executions[i].Spans, key, val)
			return err
		default:
			return fmt.Errorf("unknown key %s", printableKey(key))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	tr.Recordings = sortLinks(tr.Recordings, merged)
	return tr, nil
}
