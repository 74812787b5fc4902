package store

import (
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// markWatch tells the applier which tasks may have usage staged before
// them (a pending mark, x/spend/<task>), so that creating any other task
// reads no mark (adoptPending's read costs as much as a Badger entry).
//
// A mark is written for a task not in Badger by a write of staged spans
// (StageSpans, noted before it writes) or of raw entries (writeKVs,
// noted for every task), or was there before this process (found by the
// first look). A write noted after the applier's look at a task cannot
// write its mark: it settles the journal first, which waits for the
// applier's commit, and then finds the task.
type markWatch struct {
	mu     sync.Mutex
	looked bool                // Badger was looked in for marks
	all    bool                // any task may have a mark
	tasks  map[string]struct{} // tasks whose spans were staged
}

// markWatchMax bounds the tasks a markWatch notes; past it, any task
// may have a mark.
const markWatchMax = 4096

// note notes that task may get a mark.
func (m *markWatch) note(task string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.all:
	case len(m.tasks) >= markWatchMax:
		m.all, m.tasks = true, nil
	default:
		if m.tasks == nil {
			m.tasks = map[string]struct{}{}
		}
		m.tasks[task] = struct{}{}
	}
}

// noteAll notes that any task may get a mark.
func (m *markWatch) noteAll() {
	m.mu.Lock()
	m.all, m.tasks = true, nil
	m.mu.Unlock()
}

// may reports whether task may have a mark; the first call looks for
// any in txn.
func (m *markWatch) may(txn *badger.Txn, task string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.looked {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte(pSumPending)
		it := txn.NewIterator(opts)
		it.Seek(opts.Prefix)
		found := it.ValidForPrefix(opts.Prefix)
		it.Close()
		m.looked = true
		if found {
			m.all, m.tasks = true, nil
		}
	}
	if m.all {
		return true
	}
	_, ok := m.tasks[task]
	return ok
}
