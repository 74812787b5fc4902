package store

import (
	"context"
	"errors"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// A group commit merges writes that arrive while another is committing
// into one Badger transaction: a run's checkpoints and recordings, from
// many runs at once. Badger's cost is per transaction as well as per
// entry (a read timestamp, a commit timestamp, a conflict check, a write
// request to wait for), and a busy host commits thousands of small
// transactions a second. Each write still returns only once its own
// entries are committed, so what a returned write guarantees is
// unchanged; a write that fails inside a group (a conflict past
// update's retries, a damaged read, a group too big for one transaction)
// is committed again on its own, so one write's failure is never
// another's.
type committer struct {
	mu      sync.Mutex
	queue   []*groupWrite
	spare   []*groupWrite
	leading bool
}

// groupWrite is one write waiting in a group: fn sets its keys in the
// group's transaction and may run more than once, as update's does.
type groupWrite struct {
	ctx  context.Context
	fn   func(txn *badger.Txn) error
	err  error
	done chan bool // true: committed (err says how); false: lead the next group
}

var groupWrites = sync.Pool{New: func() any { return &groupWrite{done: make(chan bool, 1)} }}

// updateGrouped is update for a write that may share its transaction
// with concurrent ones (see committer).
func (s *Store) updateGrouped(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := groupWrites.Get().(*groupWrite)
	w.ctx, w.fn, w.err = ctx, fn, nil
	c := &s.group
	c.mu.Lock()
	c.queue = append(c.queue, w)
	lead := !c.leading
	c.leading = true
	c.mu.Unlock()
	if !lead {
		lead = !<-w.done
	}
	if lead {
		s.commitGroup(w)
	}
	err := w.err
	w.ctx, w.fn, w.err = nil, nil, nil
	groupWrites.Put(w)
	return err
}

// commitGroup commits every write queued so far (the leader's own, lead,
// among them) as one group, then hands the lead to the first write
// queued since, if any.
func (s *Store) commitGroup(lead *groupWrite) {
	c := &s.group
	c.mu.Lock()
	group := c.queue
	c.queue, c.spare = c.spare[:0], nil
	c.mu.Unlock()

	s.commitWrites(group)
	for _, w := range group {
		if w != lead { // the leader reads its own result
			w.done <- true
		}
	}

	c.mu.Lock()
	var next *groupWrite
	if len(c.queue) > 0 {
		next = c.queue[0]
	} else {
		c.leading = false
	}
	clear(group)
	c.spare = group[:0]
	c.mu.Unlock()
	if next != nil {
		next.done <- false
	}
}

// commitWrites commits a group, setting each write's err.
func (s *Store) commitWrites(group []*groupWrite) {
	live := group[:0:0]
	for _, w := range group {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			continue
		}
		live = append(live, w)
	}
	switch len(live) {
	case 0:
	case 1:
		live[0].err = s.update(live[0].ctx, live[0].fn)
	default:
		err := s.update(context.Background(), func(txn *badger.Txn) error {
			for _, w := range live {
				if err := w.fn(txn); err != nil {
					return errGroupWrite
				}
			}
			return nil
		})
		if err != nil {
			// Alone, each write meets its own outcome.
			for _, w := range live {
				w.err = s.update(w.ctx, w.fn)
			}
		}
	}
}

// errGroupWrite stops a group whose write failed; each write is then
// committed on its own.
var errGroupWrite = errors.New("a write of the group failed")
