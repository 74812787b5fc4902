package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dgraph-io/badger/v4"
)

// scanTolerant is scanTxn that goes on past values it cannot read: each
// is added to skipped as a *DamageError.
func scanTolerant(ctx context.Context, txn *badger.Txn, prefix []byte, skipped *[]*DamageError, fn func(key, val []byte) error) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	n := 0
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		item := it.Item()
		var ferr error
		if err := item.Value(func(val []byte) error { ferr = fn(item.Key(), val); return nil }); err != nil {
			*skipped = append(*skipped, asDamage(item.KeyCopy(nil), err).(*DamageError))
			continue
		}
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// CheckReport says what of a store is damaged.
type CheckReport struct {
	// Files are the store files that are damaged or missing.
	Files []*DamageError `json:"files"`
	// Tasks are the tasks that cannot be read whole, with the reason.
	Tasks []*DamageError `json:"tasks"`
	// Keys are other records that cannot be read (recordings, strategy
	// records, collection values, index entries).
	Keys []*DamageError `json:"keys"`
	// TasksRead counts the tasks that read whole.
	TasksRead int `json:"tasks_read"`
}

// Damaged reports whether the check found anything damaged.
func (r *CheckReport) Damaged() bool {
	return len(r.Files)+len(r.Tasks)+len(r.Keys) > 0
}

// Check reads every record of the store and reports what is damaged.
// Open the store read-only: its snapshot verifies every table (see
// repairSnapshot), and Check then reads every value.
func (s *Store) Check(ctx context.Context) (*CheckReport, error) {
	r := &CheckReport{Files: s.Damage(), Tasks: []*DamageError{}, Keys: []*DamageError{}}
	err := s.eachStoredTask(ctx, func(id string, d *DamageError) error {
		if d == nil {
			d = s.readTaskWhole(ctx, id, io.Discard)
		}
		if d != nil {
			r.Tasks = append(r.Tasks, d)
		} else {
			r.TasksRead++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check store %s: %w", s.dir, err)
	}
	for _, p := range []string{pRec, pStrategy, pColl, pIndex, keyMeta} {
		var skipped []*DamageError
		err := s.view(ctx, func(txn *badger.Txn) error {
			return scanTolerant(ctx, txn, []byte(p), &skipped, func(key, val []byte) error {
				if len(val) == 0 && bytes.HasPrefix(key, []byte(pIndex)) {
					return nil // index entries are empty
				}
				if p == pRec {
					var err error
					if val, err = resolveRecording(txn, key, val); err != nil {
						skipped = append(skipped, recordingDamage(key, err))
						return nil
					}
				}
				if _, err := unseal(key, val); err != nil {
					skipped = append(skipped, &DamageError{Key: printableKey(key), Err: err})
				}
				return nil
			})
		})
		if err != nil {
			var d *DamageError
			if !errors.As(err, &d) {
				return nil, fmt.Errorf("check store %s: %w", s.dir, err)
			}
			skipped = append(skipped, d)
		}
		r.Keys = append(r.Keys, skipped...)
	}
	return r, nil
}

// eachStoredTask calls fn with the id of every task that has any record
// in the store, in key order, walking t/ itself rather than an index
// (which may be damaged). d is the task's known damage: a left-out
// table that may have held its keys, or its task record missing.
func (s *Store) eachStoredTask(ctx context.Context, fn func(id string, d *DamageError) error) error {
	var ids, gone []string
	var hasTask []bool
	err := s.view(ctx, func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(pTask)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek([]byte(pTask)); it.ValidForPrefix([]byte(pTask)); it.Next() {
			id, sub, ok := parseTaskSub(it.Item().Key())
			if !ok {
				continue
			}
			if len(ids) == 0 || ids[len(ids)-1] != id {
				ids = append(ids, id)
				hasTask = append(hasTask, false)
			}
			if sub[0] == subTask {
				hasTask[len(ids)-1] = true
			}
		}
		// Tasks the time index names but that have no record left:
		// every key of theirs lay in damaged blocks.
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			seen[id] = true
		}
		it2 := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pTime)})
		defer it2.Close()
		for it2.Seek([]byte(pTime)); it2.ValidForPrefix([]byte(pTime)); it2.Next() {
			k := it2.Item().Key()
			if len(k) <= len(pTime)+8 {
				continue
			}
			if id := string(k[len(pTime)+8:]); !seen[id] {
				seen[id] = true
				gone = append(gone, id)
			}
		}
		// Tasks the value logs say lost writes to a lost table: some
		// may have no record left at all.
		for _, l := range s.lost {
			if id, _, ok := parseTaskSub(l.keys.lo); l.exact && ok && !seen[id] {
				seen[id] = true
				gone = append(gone, id)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range gone {
		d := s.lostFor(taskPrefix(id))
		if d == nil {
			d = &DamageError{Task: id, Err: errors.New("the task index names it, but none of its records is left")}
		}
		if err := fn(id, d); err != nil {
			return err
		}
	}
	for i, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := s.lostFor(taskPrefix(id))
		if d == nil && !hasTask[i] {
			d = &DamageError{Task: id, Err: errors.New("its task record is gone; its other records remain")}
		}
		if err := fn(id, d); err != nil {
			return err
		}
	}
	return nil
}

// readTaskWhole writes the task's export lines (checkpoints included)
// to w if every one of its records reads, else returns the damage.
func (s *Store) readTaskWhole(ctx context.Context, id string, w io.Writer) *DamageError {
	var lines []byte
	var n Counts
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		lines, _, err = exportTaskTxn(ctx, txn, id, true, nil, nil, &n)
		return err
	})
	if d := taskDamage(id, err); d != nil {
		return d
	}
	if err != nil {
		return &DamageError{Task: id, Err: err}
	}
	if _, err := w.Write(lines); err != nil {
		return &DamageError{Task: id, Err: err}
	}
	return nil
}

// SalvageReport says what Salvage copied and what it left behind.
type SalvageReport struct {
	Copied Counts `json:"copied"`
	// Left are the tasks and other records left behind, with the reason.
	Left []*DamageError `json:"left"`
	// Files are the damaged or missing files the source store has.
	Files []*DamageError `json:"files"`
}

// Salvage copies every task that reads whole (with its executions,
// spans, rewards and checkpoints), every readable recording, strategy
// record and collection value, into dst, a new empty store, and reports
// what it left behind. Open the source read-only.
func (s *Store) Salvage(ctx context.Context, dst *Store) (*SalvageReport, error) {
	r := &SalvageReport{Files: s.Damage(), Left: []*DamageError{}}
	tmp, err := os.CreateTemp("", "sextant-salvage-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	hdr := fmt.Sprintf(`{"type":"header","format":%q,"version":%d}`+"\n", exportFormat, exportVersion)
	if _, err := tmp.WriteString(hdr); err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	err = s.eachStoredTask(ctx, func(id string, d *DamageError) error {
		if d == nil {
			d = s.readTaskWhole(ctx, id, tmp)
		}
		if d != nil {
			r.Left = append(r.Left, d)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	// Recordings, strategy records and collection values: the readable ones.
	var raw []kv
	for _, p := range []string{pRec, pStrategy, pColl} {
		err := s.view(ctx, func(txn *badger.Txn) error {
			return scanTolerant(ctx, txn, []byte(p), &r.Left, func(key, val []byte) error {
				if p == pRec {
					var err error
					if val, err = resolveRecording(txn, key, val); err != nil {
						r.Left = append(r.Left, recordingDamage(key, err))
						return nil
					}
				}
				if _, err := unseal(key, val); err != nil {
					r.Left = append(r.Left, &DamageError{Key: printableKey(key), Err: err})
					return nil
				}
				if p == pRec {
					line := spliceType(nil, "recording", val[1:])
					_, err := tmp.Write(append(line, '\n'))
					return err
				}
				raw = append(raw, kv{k: bytes.Clone(key), v: bytes.Clone(val)})
				return nil
			})
		})
		if err != nil {
			return nil, fmt.Errorf("salvage: %w", err)
		}
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("salvage: %w", err)
	}
	n, err := dst.Import(ctx, tmp, "salvaged records")
	if err != nil {
		return nil, fmt.Errorf("salvage: write %s: %w", dst.dir, err)
	}
	r.Copied = n
	if len(raw) > 0 {
		if err := dst.writeKVs(ctx, raw); err != nil {
			return nil, fmt.Errorf("salvage: write %s: %w", dst.dir, err)
		}
	}
	return r, nil
}

// recordingDamage is the damage resolveRecording reported for the
// recording at key.
func recordingDamage(key []byte, err error) *DamageError {
	var d *DamageError
	if errors.As(err, &d) {
		return d
	}
	return &DamageError{Key: printableKey(key), Err: err}
}
