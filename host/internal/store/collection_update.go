package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Update reads the value under key and replaces it with what fn returns,
// in one transaction: a concurrent Update of the same key either sees
// this one's result or makes this one read again, so a check fn makes on
// the old value (a compare-and-swap) holds when the new value is written.
// found says whether there was a value. An error from fn writes nothing
// and is returned as is; fn may run more than once.
func (c *Collection[T]) Update(ctx context.Context, key string, fn func(old T, found bool) (T, error)) (T, error) {
	var out T
	k, err := c.key(key)
	if err != nil {
		return out, err
	}
	var fnErr error
	err = c.s.update(ctx, func(txn *badger.Txn) error {
		var old T
		found := true
		switch err := get(txn, k, &old); {
		case errors.Is(err, ErrNotFound):
			found = false
		case err != nil:
			return err
		}
		v, err := fn(old, found)
		if err != nil {
			fnErr = err
			return err
		}
		val, err := c.s.encode(v)
		if err != nil {
			return err
		}
		out = v
		return txn.Set(k, val)
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		return out, fnErr
	}
	if err != nil {
		return out, fmt.Errorf("collection %s: update %q: %w", c.name, key, err)
	}
	return out, nil
}
