package proxy

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// replayCacheSize bounds the recordings a proxy keeps decoded.
const replayCacheSize = 4096

// replayCache keeps pass-through recordings decoded, by hash, each with
// the store's stamp of the recording it was decoded from: a replay then
// reads the stamp (a key lookup) instead of reading and decoding the
// recording twice (the store's JSON, then the answer it holds), and a
// recording replaced since (a live call recorded it anew) is read again.
type replayCache struct {
	mu sync.Mutex
	m  map[string]*cachedReplay
}

// cachedReplay is one recording, decoded. Nothing in it is written
// after it is cached.
type cachedReplay struct {
	stamp uint64
	rec   *store.Recording
	env   recorded
	body  []byte
	// unfinished says why the recorded answer is not one to replay (a
	// whole Responses answer that did not finish: staleUnfinished), or
	// "" when it is one.
	unfinished string
}

// get returns the recording stored under hash (a call on route rt),
// decoded: from the cache when its stamp is current. A recording that is not a pass-through one
// (env.Status 0) is returned with the decoding error, not cached.
func (c *replayCache) get(ctx context.Context, st *store.Store, hash string, rt *route) (*cachedReplay, error) {
	stamp, err := st.RecordingStamp(ctx, hash)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	e := c.m[hash]
	c.mu.Unlock()
	if e != nil && e.stamp == stamp {
		return e, nil
	}
	rec, stamp, err := st.RecordingWithStamp(ctx, hash)
	if err != nil {
		return nil, err
	}
	e = &cachedReplay{stamp: stamp, rec: rec}
	if err := json.Unmarshal(rec.Response, &e.env); err != nil || e.env.Status == 0 {
		return e, errNotPassThrough{err}
	}
	e.body = e.env.bytes()
	e.unfinished = staleUnfinished(rt, &e.env)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*cachedReplay)
	}
	if len(c.m) >= replayCacheSize {
		for k := range c.m { // evict one at random (map order)
			delete(c.m, k)
			break
		}
	}
	c.m[hash] = e
	c.mu.Unlock()
	return e, nil
}

// errNotPassThrough is a recording the translated path made, or one
// whose answer does not decode.
type errNotPassThrough struct{ err error }

func (e errNotPassThrough) Error() string {
	if e.err == nil {
		return "no status"
	}
	return e.err.Error()
}
