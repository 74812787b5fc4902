package store

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"
)

// Names of the collections other packages keep in the store.
const (
	CollReplayResults = "replay-results" // cached replay outcomes, by (task, strategy hash, routine hash, plugin versions)
	CollComparisons   = "comparisons"    // baseline-vs-candidate comparisons
	CollGateDecisions = "gate-decisions" // gate verdicts with reasons
	CollReviews       = "reviews"        // candidates waiting for a person
)

// Collection is a named set of JSON values of one Go type, stored under
// c/<name>/<key> with the same schema version and redaction as every
// other record. It is for features that need a keyed blob and no index.
type Collection[T any] struct {
	s      *Store
	name   string
	prefix []byte
}

// NewCollection returns the collection with the given name (letters,
// digits and . _ - : +).
func NewCollection[T any](s *Store, name string) (*Collection[T], error) {
	if err := validID("collection name", name); err != nil {
		return nil, err
	}
	return &Collection[T]{s: s, name: name, prefix: collPrefix(name)}, nil
}

func (c *Collection[T]) key(k string) ([]byte, error) {
	if k == "" || len(k) > 512 || !utf8.ValidString(k) {
		return nil, fmt.Errorf("collection %s: key must be 1 to 512 bytes of UTF-8", c.name)
	}
	return append(append([]byte(nil), c.prefix...), k...), nil
}

// Put stores v under key, replacing any earlier value.
func (c *Collection[T]) Put(ctx context.Context, key string, v T) error {
	k, err := c.key(key)
	if err != nil {
		return err
	}
	val, err := c.s.encode(v)
	if err != nil {
		return fmt.Errorf("collection %s: put %q: %w", c.name, key, err)
	}
	if err := c.s.update(ctx, func(txn *badger.Txn) error { return txn.Set(k, val) }); err != nil {
		return fmt.Errorf("collection %s: put %q: %w", c.name, key, err)
	}
	return nil
}

// Get reads the value under key; ErrNotFound if there is none.
func (c *Collection[T]) Get(ctx context.Context, key string) (T, error) {
	var v T
	k, err := c.key(key)
	if err != nil {
		return v, err
	}
	if err := c.s.view(ctx, func(txn *badger.Txn) error { return get(txn, k, &v) }); err != nil {
		return v, fmt.Errorf("collection %s: get %q: %w", c.name, key, err)
	}
	return v, nil
}

// Delete removes the value under key; a missing key is not an error.
func (c *Collection[T]) Delete(ctx context.Context, key string) error {
	k, err := c.key(key)
	if err != nil {
		return err
	}
	if err := c.s.update(ctx, func(txn *badger.Txn) error { return txn.Delete(k) }); err != nil {
		return fmt.Errorf("collection %s: delete %q: %w", c.name, key, err)
	}
	return nil
}

// Scan calls fn for each value whose key starts with prefix, in key
// order. An error from fn stops the scan and is returned.
func (c *Collection[T]) Scan(ctx context.Context, prefix string, fn func(key string, v T) error) error {
	p := append(append([]byte(nil), c.prefix...), prefix...)
	err := c.s.scan(ctx, p, func(key, val []byte) error {
		var v T
		if err := decode(key, val, &v); err != nil {
			return err
		}
		return fn(string(key[len(c.prefix):]), v)
	})
	if err != nil {
		return fmt.Errorf("collection %s: scan: %w", c.name, err)
	}
	return nil
}
