package store

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
)

// recFilter answers "is there no recording with this hash?" without
// reading Badger: every live LLM call asks it first (see "Why a Bloom
// filter answers a recording miss" in RATIONALE.md). It is a Bloom filter
// of the recording hashes, built from Badger's keys in the background
// once a writer has opened the store (the journal replayed), and told of
// every recording written since (noteRecording, before the write is
// visible): "absent" is then exact, and "maybe" falls through to Badger.
// Until it is built, and on a reader, every answer is "maybe".
type recFilter struct {
	seed   maphash.Seed
	cur    atomic.Pointer[bloom] // nil until built
	ctx    context.Context       // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the build ends

	mu      sync.Mutex
	pending []uint64 // hashes noted while the build runs
}

// bloom is a blocked Bloom filter: each hash sets 4 bits of one word.
// Past the number of keys it is sized for it answers "maybe" more often,
// never "absent" wrongly.
type bloom struct {
	words []atomic.Uint64
}

const (
	bloomBitsPerKey = 32      // sized for twice the keys at the build, at 16 bits a key: about 0.2% false "maybe"
	bloomMinWords   = 1 << 14 // 128 KiB
)

func newBloom(keys int) *bloom {
	return &bloom{words: make([]atomic.Uint64, max(bloomMinWords, keys*bloomBitsPerKey/64))}
}

// at returns the word and bits of hash h.
func (b *bloom) at(h uint64) (*atomic.Uint64, uint64) {
	w := &b.words[(h>>32)*uint64(len(b.words))>>32]
	m := uint64(1)<<(h&63) | uint64(1)<<(h>>6&63) | uint64(1)<<(h>>12&63) | uint64(1)<<(h>>18&63)
	return w, m
}

func (b *bloom) add(h uint64) {
	w, m := b.at(h)
	w.Or(m)
}

func (b *bloom) has(h uint64) bool {
	w, m := b.at(h)
	return w.Load()&m == m
}

func (f *recFilter) hash(hash string) uint64 { return maphash.String(f.seed, hash) }

// absent reports whether no recording has this hash, for certain.
func (f *recFilter) absent(hash string) bool {
	if f == nil {
		return false
	}
	b := f.cur.Load()
	return b != nil && !b.has(f.hash(hash))
}

// noteRecording adds a recording about to be written to the filter.
// Every write of a recording key calls it first.
func (s *Store) noteRecording(hash string) {
	f := s.recf
	if f == nil {
		return
	}
	h := f.hash(hash)
	if b := f.cur.Load(); b != nil {
		b.add(h)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.cur.Load(); b != nil { // built meanwhile
		b.add(h)
		return
	}
	f.pending = append(f.pending, h)
}

// startRecFilter builds the filter of a writer that just opened, in the
// background, from the recording keys Badger holds and those noted
// meanwhile.
func (s *Store) startRecFilter() {
	f := &recFilter{seed: maphash.MakeSeed(), done: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	s.recf = f
	go func() {
		defer close(f.done)
		// Every recording is in the scan (written before Open returned)
		// or noted into pending.
		var hs []uint64
		prefix := []byte(pRec)
		err := s.db.View(func(txn *badger.Txn) error {
			hook("recfilter-scan")
			opts := badger.DefaultIteratorOptions
			opts.Prefix, opts.PrefetchValues = prefix, false
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
				if len(hs)%4096 == 0 && f.ctx.Err() != nil {
					return f.ctx.Err()
				}
				hs = append(hs, f.hash(string(it.Item().Key()[len(prefix):])))
			}
			return nil
		})
		f.mu.Lock()
		defer f.mu.Unlock()
		if err != nil {
			if f.ctx.Err() == nil {
				s.log.Warn("recording filter not built: every recording lookup reads the store", "err", err)
			}
			f.pending = nil
			return
		}
		b := newBloom(len(hs) + len(f.pending))
		for _, h := range hs {
			b.add(h)
		}
		for _, h := range f.pending {
			b.add(h)
		}
		f.pending = nil
		f.cur.Store(b)
	}()
}

// stopRecFilter stops a build in progress and waits for it, before the
// database closes.
func (s *Store) stopRecFilter() {
	if f := s.recf; f != nil {
		f.cancel()
		<-f.done
	}
}
