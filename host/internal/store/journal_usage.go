package store

import (
	"bytes"
	"errors"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// usageMerge bounds the usage entries the applier merges into one.
const usageMerge = 64

// usagePrefix and usageSuffix enclose the calls of a usage value
// (sumUsageValue), after its version byte.
const (
	usagePrefix = `{"calls":[`
	usageSuffix = `]}`
)

// usageAcc is a run of an execution's usage entries being merged: one
// entry keyed by the first's seq, its calls those of all of them.
type usageAcc struct {
	key  []byte // the first entry's key
	body []byte // the calls, comma-separated
	n    int    // entries merged
	v    []byte // the only entry's value, while n == 1
}

// isUsageKey reports whether k, a key of a span burst's entries (spans
// and usage), is a usage entry's: placed beneath a summary or waiting
// under x/spend/ (usageKVs, placeUsage).
func isUsageKey(k []byte) bool {
	return bytes.HasPrefix(k, []byte(pSum)) || bytes.HasPrefix(k, []byte(pSumPending))
}

// isUsageKeyOf reports whether k is a usage entry of the execution placed
// beneath its task's summary (x/sum/<inv:8><task>/u/<exec>/<seq:8>),
// without building the key.
func isUsageKeyOf(k []byte, task, exec string) bool {
	if len(k) != len(pSum)+8+len(task)+3+len(exec)+1+8 || string(k[:len(pSum)]) != pSum {
		return false
	}
	k = k[len(pSum)+8:]
	if string(k[:len(task)]) != task || k[len(task)] != '/' || k[len(task)+1] != sumUsage || k[len(task)+2] != '/' {
		return false
	}
	k = k[len(task)+3:]
	return string(k[:len(exec)]) == exec && k[len(exec)] == '/'
}

// usageCalls is the calls of a usage value, comma-separated, and false if
// v is not in sumUsageValue's form.
func usageCalls(v []byte) ([]byte, bool) {
	if len(v) < 1+len(usagePrefix)+len(usageSuffix) || v[0] != schemaVersion {
		return nil, false
	}
	js := v[1:]
	if !bytes.HasPrefix(js, []byte(usagePrefix)) || !bytes.HasSuffix(js, []byte(usageSuffix)) {
		return nil, false
	}
	return js[len(usagePrefix) : len(js)-len(usageSuffix)], true
}

// addUsage merges a usage entry of a fresh burst into its execution's run
// of entries. Its calls follow the run's (fresh spans number on), and a
// merged entry keyed by the run's first seq is found by readers as the
// entries were: no key but the first is written.
func (a *applier) addUsage(id seqID, e kv) error {
	calls, ok := usageCalls(e.v)
	if !ok || len(calls) == 0 {
		return a.Set(e.k, e.v)
	}
	if a.uses == nil {
		a.uses = map[seqID]*usageAcc{}
	}
	u := a.uses[id]
	if u != nil && u.n > 0 && u.n < usageMerge {
		if u.n == 1 {
			first, _ := usageCalls(u.v)
			u.body = append(u.body[:0], first...)
		}
		u.body = append(append(u.body, ','), calls...)
		u.n++
		return nil
	}
	if u != nil {
		if err := a.setUsage(u); err != nil {
			return err
		}
	} else {
		u = usePool.Get().(*usageAcc)
		a.uses[id] = u
	}
	*u = usageAcc{key: e.k, n: 1, v: e.v, body: u.body[:0]}
	return nil
}

// usePool keeps usage accumulators, their bodies grown, from one apply
// transaction to the next, as accPool keeps span accumulators: setFramed
// copies a body, so nothing Badger keeps points into one.
var usePool = sync.Pool{New: func() any { return new(usageAcc) }}

// setUsage sets a run of merged usage entries as one.
func (a *applier) setUsage(u *usageAcc) error {
	switch u.n {
	case 0:
		return nil
	case 1:
		u.n = 0
		return a.Set(u.key, u.v)
	}
	u.n = 0
	return a.setFramed(u.key, usagePrefix, u.body, usageSuffix)
}

func (a *applier) flushUsage(id seqID) error {
	if u := a.uses[id]; u != nil {
		return a.setUsage(u)
	}
	return nil
}

// setUsageUnion sets the usage entry of a burst that writes spans again:
// an entry already at its key (one the applier merged, or of a burst cut
// otherwise) may list calls this one does not, which it keeps. A call
// both list takes the new value. A stored value that does not parse is
// replaced, as any write replaced it before.
func setUsageUnion(txn *badger.Txn, e kv) error {
	item, err := txn.Get(e.k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return txn.Set(e.k, e.v)
	}
	if err != nil {
		return err
	}
	old, err := item.ValueCopy(nil)
	if err != nil {
		return asDamage(e.k, err)
	}
	if len(old) == 0 || old[0] != schemaVersion || len(e.v) == 0 || e.v[0] != schemaVersion {
		return txn.Set(e.k, e.v)
	}
	was, ok1 := parseSumUsage(old[1:], nil)
	now, ok2 := parseSumUsage(e.v[1:], nil)
	if !ok1 || !ok2 {
		return txn.Set(e.k, e.v)
	}
	n := len(now)
	for _, c := range was {
		if !slices.ContainsFunc(now[:n], func(x CallUsage) bool { return x.Seq == c.Seq }) {
			now = append(now, c)
		}
	}
	if len(now) == n {
		return txn.Set(e.k, e.v)
	}
	slices.SortStableFunc(now, func(a, b CallUsage) int { return cmpSeq(a.Seq, b.Seq) })
	return txn.Set(e.k, sumUsageValue(now))
}

// setSpanKV sets an entry of a span burst (placed: placeUsage); in a
// burst that writes spans again (rewrite), a usage entry is set by
// setUsageUnion.
func setSpanKV(txn *badger.Txn, e kv, rewrite bool) error { return setSpanKVTo(txn, txn, e, rewrite) }

// setSpanKVTo is setSpanKV setting through w (the applier) but for a
// usage union, which reads txn.
func setSpanKVTo(txn *badger.Txn, w setter, e kv, rewrite bool) error {
	if rewrite && isUsageKey(e.k) {
		return setUsageUnion(txn, e)
	}
	return w.Set(e.k, e.v)
}
