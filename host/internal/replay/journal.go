package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// journal keeps one replay's record in memory and reads recordings from the
// dataset store: a replay never writes to the store it replays.
type journal struct {
	src *store.Store
	now time.Time

	mu     sync.Mutex
	exec   *store.Execution
	spans  []store.Span
	live   map[string]*store.Recording // answers fetched live (on_miss = live)
	misses int
	hits   int
	ids    int
	// track records the recordings read (key → digest, "" for a miss) in
	// reads, for the result cache.
	track bool
	reads map[string]string
	// record keeps answers fetched live beyond this replay (Config.Record).
	record *store.Store
}

var _ run.Journal = (*journal)(nil)

func newJournal(src *store.Store, now time.Time) *journal {
	return &journal{src: src, now: now, live: map[string]*store.Recording{}}
}

func (j *journal) CreateTask(context.Context, *store.Task) error { return nil }

func (j *journal) CreateExecution(_ context.Context, e *store.Execution) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	c := *e
	j.exec = &c
	return nil
}

func (j *journal) Execution(_ context.Context, task, id string) (*store.Execution, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.exec == nil || j.exec.ID != id {
		return nil, fmt.Errorf("execution %q of task %q: %w", id, task, store.ErrNotFound)
	}
	c := *j.exec
	return &c, nil
}

func (j *journal) PutExecution(_ context.Context, e *store.Execution) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	c := *e
	j.exec = &c
	return nil
}

func (j *journal) SetTaskStatus(context.Context, string, store.Status) error { return nil }

// Checkpoint keeps the spans (a replay's trace) and drops the state: a
// replay is never resumed, it is run again.
func (j *journal) Checkpoint(_ context.Context, _ *store.Checkpoint, spans ...store.Span) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, sp := range spans {
		replaced := false
		for i := range j.spans {
			if j.spans[i].Seq == sp.Seq {
				j.spans[i], replaced = sp, true
			}
		}
		if !replaced {
			j.spans = append(j.spans, sp)
		}
	}
	return nil
}

// Recording serves the task's recorded calls; a miss is counted.
func (j *journal) Recording(ctx context.Context, key string) (*store.Recording, error) {
	j.mu.Lock()
	if r, ok := j.live[key]; ok {
		j.mu.Unlock()
		return r, nil
	}
	j.mu.Unlock()
	r, err := j.src.Recording(ctx, key)
	if err != nil && j.record != nil && j.record != j.src {
		if kept, kerr := j.record.Recording(ctx, key); kerr == nil {
			r, err = kept, nil
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err == nil {
		j.hits++
	} else {
		j.misses++
	}
	j.read(key, r, err)
	return r, err
}

// read notes one recording read for the result cache; j.mu is held.
func (j *journal) read(key string, r *store.Recording, err error) {
	if !j.track {
		return
	}
	if j.reads == nil {
		j.reads = map[string]string{}
	}
	if err != nil {
		j.reads[key] = ""
		return
	}
	j.reads[key] = recordingDigest(r)
}

// answer serves recorded human answers.
func (j *journal) answer(ctx context.Context, task, node string, n int) (map[string]any, bool) {
	key := store.HumanKey(task, node, n)
	rec, err := j.src.Recording(ctx, key)
	j.mu.Lock()
	j.read(key, rec, err)
	j.mu.Unlock()
	if err != nil {
		return nil, false
	}
	var a map[string]any
	if err := json.Unmarshal(rec.Response, &a); err != nil {
		return nil, false
	}
	return a, true
}

// PutRecording keeps answers fetched live in memory, and in the record
// store when there is one.
func (j *journal) PutRecording(ctx context.Context, r *store.Recording) error {
	j.mu.Lock()
	j.live[r.Hash] = r
	j.mu.Unlock()
	if j.record != nil {
		return j.record.PutRecording(ctx, r)
	}
	return nil
}

func (j *journal) Redactor() *store.Redactor { return j.src.Redactor() }

func (j *journal) NewID() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ids++
	return fmt.Sprintf("replay-%d", j.ids)
}

func (j *journal) Now() time.Time { return j.now }

// Stateless tells the runner not to encode run state: a replay is never
// resumed.
func (j *journal) Stateless() bool { return true }
