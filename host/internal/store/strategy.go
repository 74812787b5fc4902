package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// PutStrategy records a promoted strategy version. A version is written
// once: writing it again with the same hash does nothing, with another
// hash is ErrExists.
func (s *Store) PutStrategy(ctx context.Context, r *StrategyRecord) error {
	if r.Created.IsZero() {
		r.Created = s.Now()
	}
	r.Created = r.Created.UTC()
	if err := checkStrategy(r); err != nil {
		return fmt.Errorf("write strategy: %w", err)
	}
	val, err := s.encode(r)
	if err != nil {
		return fmt.Errorf("write strategy %s %s: %w", r.Name, r.Version, err)
	}
	err = s.update(ctx, func(txn *badger.Txn) error {
		key := strategyKey(r.Name, r.Version)
		var old StrategyRecord
		switch err := get(txn, key, &old); {
		case err == nil && old.Hash == r.Hash:
			return nil
		case err == nil:
			return fmt.Errorf("%w with hash %s", ErrExists, old.Hash)
		case !errors.Is(err, ErrNotFound):
			return err
		}
		return txn.Set(key, val)
	})
	if err != nil {
		return fmt.Errorf("write strategy %s %s: %w", r.Name, r.Version, err)
	}
	return nil
}

func checkStrategy(r *StrategyRecord) error {
	if err := validID("strategy name", r.Name); err != nil {
		return err
	}
	if err := validID("strategy version", r.Version); err != nil {
		return err
	}
	if r.Parent != "" {
		if err := validID("parent version", r.Parent); err != nil {
			return err
		}
	}
	if r.Hash == "" {
		return fmt.Errorf("strategy %s %s: hash is empty", r.Name, r.Version)
	}
	if len(r.Evidence) > 0 && !json.Valid(r.Evidence) {
		return fmt.Errorf("strategy %s %s: evidence is not valid JSON", r.Name, r.Version)
	}
	return nil
}

// Strategy reads one strategy version.
func (s *Store) Strategy(ctx context.Context, name, version string) (*StrategyRecord, error) {
	if err := validID("strategy name", name); err != nil {
		return nil, fmt.Errorf("read strategy: %w", err)
	}
	if err := validID("strategy version", version); err != nil {
		return nil, fmt.Errorf("read strategy: %w", err)
	}
	var r StrategyRecord
	if err := s.view(ctx, func(txn *badger.Txn) error { return get(txn, strategyKey(name, version), &r) }); err != nil {
		return nil, fmt.Errorf("read strategy %s %s: %w", name, version, err)
	}
	return &r, nil
}

// StrategyLog returns every recorded version of a strategy, oldest first
// (by time, then version).
func (s *Store) StrategyLog(ctx context.Context, name string) ([]StrategyRecord, error) {
	if err := validID("strategy name", name); err != nil {
		return nil, fmt.Errorf("read strategy log: %w", err)
	}
	var out []StrategyRecord
	err := s.scan(ctx, strategyPrefix(name), func(key, val []byte) error {
		var r StrategyRecord
		if err := decode(key, val, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read strategy log of %s: %w", name, err)
	}
	slices.SortStableFunc(out, func(a, b StrategyRecord) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out, nil
}

// StrategyNames lists the names of the strategies with recorded versions,
// sorted.
func (s *Store) StrategyNames(ctx context.Context) ([]string, error) {
	var out []string
	err := s.scan(ctx, []byte(pStrategy), func(key, _ []byte) error {
		rest := key[len(pStrategy):]
		if i := bytes.IndexByte(rest, '/'); i > 0 {
			name := string(rest[:i])
			if len(out) == 0 || out[len(out)-1] != name {
				out = append(out, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list strategies: %w", err)
	}
	return out, nil
}
