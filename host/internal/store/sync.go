package store

import (
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// syncer coalesces fsyncs: a caller needs one sync that starts after its
// commit; callers arriving while a sync runs share the next one. With
// many runs checkpointing at once this is a group commit, one fsync for
// all of them.
type syncer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	started uint64 // syncs begun
	done    uint64 // syncs finished
	running bool
	err     error // of the last finished sync
}

func (s *syncer) sync(db *badger.DB) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
	}
	need := s.started + 1 // the next sync to begin covers our commit
	for s.done < need {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		n := s.started
		s.mu.Unlock()
		err := db.Sync()
		s.mu.Lock()
		s.running = false
		s.done, s.err = n, err
		s.cond.Broadcast()
	}
	return s.err
}
