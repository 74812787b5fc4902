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
//
// Once more recordings were noted than it is sized for, a lookup starts
// a rebuild, the same build again: the filter in use answers meanwhile
// and takes every note, and the notes from the rebuild's start on are
// collected for the new filter too. The start waits for no commit (it
// is skipped while one runs: the next lookup tries again), so that every
// recording is in the new filter: one noted before the start is in
// Badger's scan, or still in the journal's overlay, read after the start;
// one noted after it is collected.
type recFilter struct {
	s      *Store
	seed   maphash.Seed
	cur    atomic.Pointer[bloom] // nil until built
	ctx    context.Context       // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{}  // closed when the first build ends
	builds sync.WaitGroup // builds in progress

	// building is set while a build runs, and after one failed: no
	// other starts.
	building   atomic.Bool
	collecting atomic.Bool // collect, for notes to read without mu

	mu      sync.Mutex
	collect bool     // a build runs: notes go to pending too
	pending []uint64 // hashes noted while the build runs
}

// bloom is a blocked Bloom filter: each hash sets 4 bits of one word.
// Past the number of keys it is sized for it answers "maybe" more often,
// never "absent" wrongly.
type bloom struct {
	words []atomic.Uint64
	keys  atomic.Int64 // hashes added (a hash added twice counts twice)
	room  int64        // the keys it is sized for, at 16 bits a key
}

// bloomBitsPerKey sizes a filter for twice the keys at its build, at 16
// bits a key: about 0.2% false "maybe".
const bloomBitsPerKey = 32

// bloomMinWords is the smallest filter, in words (128 KiB); tests lower it.
var bloomMinWords = 1 << 14

func newBloom(keys int) *bloom {
	n := max(bloomMinWords, keys*bloomBitsPerKey/64)
	return &bloom{words: make([]atomic.Uint64, n), room: int64(n) * 64 / 16}
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
	b.keys.Add(1)
}

func (b *bloom) has(h uint64) bool {
	w, m := b.at(h)
	return w.Load()&m == m
}

func (f *recFilter) hash(hash string) uint64 { return maphash.String(f.seed, hash) }

// absent reports whether no recording has this hash, for certain. A
// filter past its room starts a rebuild.
func (f *recFilter) absent(hash string) bool {
	if f == nil {
		return false
	}
	b := f.cur.Load()
	if b == nil {
		return false
	}
	if b.keys.Load() > b.room && !f.building.Load() {
		f.rebuild()
	}
	return !b.has(f.hash(hash))
}

// noteRecording adds a recording about to be written to the filter.
// Every write of a recording key calls it first, inside the commit's
// hold of s.wmu (or, for a journaled one, under the journal's lock).
func (s *Store) noteRecording(hash string) { s.recf.note(hash) }

func (f *recFilter) note(hash string) {
	if f == nil {
		return
	}
	h := f.hash(hash)
	if !f.collecting.Load() {
		// cur is loaded after collecting: a build that just ended
		// stored its filter first.
		if b := f.cur.Load(); b != nil {
			b.add(h)
		}
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.collect {
		f.pending = append(f.pending, h)
	}
	if b := f.cur.Load(); b != nil { // the one in use, or the new one
		b.add(h)
	}
}

// startRecFilter builds the filter of a writer that just opened, in the
// background, from the recording keys Badger holds and those noted
// meanwhile.
func (s *Store) startRecFilter() {
	f := &recFilter{s: s, seed: maphash.MakeSeed(), done: make(chan struct{}), collect: true}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.collecting.Store(true)
	f.building.Store(true)
	s.recf = f
	if s.jr != nil {
		s.jr.filter = f
	}
	f.builds.Add(1)
	go func() {
		defer close(f.done)
		f.build()
	}()
}

// rebuild starts a build of a filter sized for the recordings now, if
// no commit runs (one that noted a recording before the start could
// commit it after the scan began).
func (f *recFilter) rebuild() {
	if !f.building.CompareAndSwap(false, true) {
		return
	}
	s := f.s
	if !s.wmu.TryLock() {
		f.building.Store(false)
		return
	}
	f.mu.Lock()
	started := f.ctx.Err() == nil // Close waits for the builds it did not stop
	if started {
		f.collect = true
		f.collecting.Store(true)
		f.builds.Add(1)
	}
	f.mu.Unlock()
	s.wmu.Unlock()
	if started {
		go f.build()
	}
}

// build fills a new filter from the recordings journaled but not
// applied, Badger's recording keys, and those noted meanwhile, and puts
// it in use.
func (f *recFilter) build() {
	defer f.builds.Done()
	s := f.s
	// Every recording is in the journal's overlay (its note, under the
	// journal's lock, came before this read), in the scan (it left the
	// overlay once committed), or noted into pending.
	var hs []uint64
	if j := s.jr; j != nil {
		j.mu.Lock()
		for h := range j.rdngs {
			hs = append(hs, f.hash(h))
		}
		j.mu.Unlock()
	}
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
	pending := f.pending
	f.collect, f.pending = false, nil
	if err != nil {
		if f.ctx.Err() == nil {
			s.log.Warn("recording filter not built: recording lookups read the store more often", "err", err)
		}
		f.collecting.Store(false) // building stays set: no build starts again
		return
	}
	b := newBloom(len(hs) + len(pending))
	for _, h := range hs {
		b.add(h)
	}
	for _, h := range pending {
		b.add(h)
	}
	f.cur.Store(b)
	f.collecting.Store(false)
	f.building.Store(false)
	hook("recfilter-built")
}

// stopRecFilter stops the builds in progress and waits for them, before
// the database closes.
func (s *Store) stopRecFilter() {
	if f := s.recf; f != nil {
		f.mu.Lock()
		f.cancel()
		f.mu.Unlock()
		f.builds.Wait()
	}
}
