package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/sextant-dev/sextant/sdk"
)

// ChatKey returns the canonical form of a provider request and its hash,
// the key of its recording. The canonical form is the request as JSON
// without its Config (which holds no part of the question, only how to
// reach the provider) and without its Vars (run data a scripted provider
// may read, but no model ever sees: the question is the messages and
// parameters), redacted with red, so that a live request and its
// recording match exactly when and only when they ask the same thing.
func ChatKey(red *Redactor, req *sdk.ChatRequest) (hash string, canonical []byte, err error) {
	sum, canonical, err := ChatKeyDigest(nil, red, req)
	if err != nil {
		return "", nil, err
	}
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:]), canonical, nil
}

// ChatKeyDigest is ChatKey with the hash as the SHA-256 digest it is the
// hex of, for a caller that derives its own keys from it (a run's
// recording key) and would otherwise make the hex string twice. The
// canonical form is written into dst's array when it has room (and
// redaction leaves it there), so a caller may reuse one buffer.
func ChatKeyDigest(dst []byte, red *Redactor, req *sdk.ChatRequest) (sum [sha256.Size]byte, canonical []byte, err error) {
	if req == nil {
		return sum, nil, fmt.Errorf("chat key: nil request")
	}
	if red == nil {
		red = DefaultRedactor()
	}
	if n := chatRequestSize(req); cap(dst) < n {
		dst = make([]byte, 0, n)
	}
	js, ok := appendChatRequest(dst[:0], req)
	if !ok { // encoding/json's bytes or error
		r := *req
		r.Config, r.Vars = nil, nil
		if js, err = json.Marshal(&r); err != nil {
			return sum, nil, fmt.Errorf("chat key: %w", err)
		}
	}
	if js, err = red.redactJSON(js); err != nil {
		return sum, nil, fmt.Errorf("chat key: %w", err)
	}
	return keySum("sextant.chat.v1", js), js, nil
}

// HumanKey is the recording key of the n-th answer (from 1) given at a
// human step of a task.
func HumanKey(task, step string, n int) string {
	return keyHash("sextant.human.v1", []byte(task+"\x00"+step+"\x00"+strconv.Itoa(n)))
}

func keyHash(domain string, b []byte) string {
	sum := keySum(domain, b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// keySum is the SHA-256 of domain, a zero byte and b.
func keySum(domain string, b []byte) (sum [sha256.Size]byte) {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write(b)
	h.Sum(sum[:0])
	return sum
}

// NewChatRecording builds the recording of one provider call, keyed and
// redacted as ChatKey does. task may be empty.
func NewChatRecording(red *Redactor, provider, task string, req *sdk.ChatRequest, resp *sdk.ChatResponse, latency time.Duration) (*Recording, error) {
	hash, canon, err := ChatKey(red, req)
	if err != nil {
		return nil, err
	}
	return ChatRecording(hash, canon, provider, task, resp, latency)
}

// ChatRecording is NewChatRecording for a request whose key and canonical
// form ChatKey already gave (a run computes them to look the recording up
// first, and does not encode and redact the request again).
func ChatRecording(hash string, canonical []byte, provider, task string, resp *sdk.ChatResponse, latency time.Duration) (*Recording, error) {
	if resp == nil {
		return nil, fmt.Errorf("chat recording: nil response")
	}
	out, ok := appendChatResponse(make([]byte, 0, chatResponseSize(resp)), resp)
	if !ok { // encoding/json's bytes or error
		var err error
		if out, err = json.Marshal(resp); err != nil {
			return nil, fmt.Errorf("chat recording: %w", err)
		}
	}
	return &Recording{
		Hash: hash, Kind: RecordChat, Provider: provider, Task: task,
		Request: canonical, Response: out, Usage: resp.Usage, Latency: latency,
	}, nil
}

// PutChatRecording is PutRecording(ctx, rec) for the rec that
// ChatRecording(hash, canonical, provider, task, resp, latency) gives,
// stored under key (a run's recording key): the recording and its
// response are encoded straight into the record, and none is made. A
// run writes one per live provider call.
func (s *Store) PutChatRecording(ctx context.Context, key string, canonical []byte, provider, task string, resp *sdk.ChatResponse, latency time.Duration) error {
	if resp == nil {
		return fmt.Errorf("chat recording: nil response")
	}
	buf := recordingBufs.Get().(*[]byte)
	out, ok := appendChatResponse((*buf)[:0], resp)
	defer func() {
		if *buf = out[:0]; cap(out) <= maxPooledRecording {
			recordingBufs.Put(buf)
		}
	}()
	if !ok { // encoding/json's bytes or error
		js, err := json.Marshal(resp)
		if err != nil {
			return fmt.Errorf("chat recording: %w", err)
		}
		out = js
	}
	r := Recording{Hash: key, Kind: RecordChat, Provider: provider, Task: task,
		Request: canonical, Response: out, Usage: resp.Usage, Latency: latency, Created: s.Now().UTC()}
	if err := checkRecording(&r); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	return s.putRecording(ctx, &r)
}

// humanRequest is what a human step asked, as kept in its recording.
type humanRequest struct {
	Task   string `json:"task"`
	Step   string `json:"step"`
	N      int    `json:"n"`
	Prompt string `json:"prompt,omitempty"`
}

// NewHumanRecording builds the recording of the n-th answer (from 1)
// given at a human step; answer is the JSON the person supplied (for
// `sextant resume --set answer=yes`, {"answer":"yes"}).
func NewHumanRecording(task, step string, n int, prompt string, answer json.RawMessage) (*Recording, error) {
	req, err := json.Marshal(humanRequest{Task: task, Step: step, N: n, Prompt: prompt})
	if err != nil {
		return nil, fmt.Errorf("human recording: %w", err)
	}
	return &Recording{
		Hash: HumanKey(task, step, n), Kind: RecordHuman, Task: task,
		Request: req, Response: answer,
	}, nil
}

// PutRecording stores a recording under its hash, replacing any earlier
// one, and links it to r.Task if set. The stored copy is redacted.
func (s *Store) PutRecording(ctx context.Context, r *Recording) error {
	if r.Created.IsZero() {
		r.Created = s.Now()
	}
	r.Created = r.Created.UTC()
	if err := checkRecording(r); err != nil {
		return fmt.Errorf("write recording: %w", err)
	}
	return s.putRecording(ctx, r)
}

// recordingBufs hold the arrays recordings are encoded into: the journal
// copies a record into its segment, and keeps none of them.
var recordingBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledRecording bounds the arrays recordingBufs keeps.
const maxPooledRecording = 64 << 10

// putRecording is PutRecording for r that checkRecording passed.
func (s *Store) putRecording(ctx context.Context, r *Recording) error {
	buf := recordingBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledRecording {
			recordingBufs.Put(buf)
		}
	}()
	if n := recordingSize(r); cap(*buf) < n {
		*buf = make([]byte, 0, n)
	}
	val, err := s.appendRecording((*buf)[:0], r)
	if err != nil {
		return fmt.Errorf("write recording %s: %w", r.Hash, err)
	}
	if s.ro {
		return fmt.Errorf("write recording %s: store %s: %w", r.Hash, s.dir, ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Journaled (journal.go) like a checkpoint, and synced with the
	// checkpoint that follows it; the journal notes it (noteRecording).
	if _, err := s.jr.appendRecording(r.Hash, r.Task, val); err != nil {
		return fmt.Errorf("write recording %s: %w", r.Hash, err)
	}
	return nil
}

func checkRecording(r *Recording) error {
	if err := validID("recording hash", r.Hash); err != nil {
		return err
	}
	if !knownKind(r.Kind) {
		return fmt.Errorf("recording %s: unknown kind %q (want chat, human, tool, tool_started or tool_list)", r.Hash, r.Kind)
	}
	if r.Task != "" {
		if err := validID("task id", r.Task); err != nil {
			return err
		}
	}
	if !json.Valid(r.Request) {
		return fmt.Errorf("recording %s: request is not valid JSON", r.Hash)
	}
	if !json.Valid(r.Response) {
		return fmt.Errorf("recording %s: response is not valid JSON", r.Hash)
	}
	return nil
}

// Recording reads the recording with the given hash; ErrNotFound means
// the call was never recorded.
func (s *Store) Recording(ctx context.Context, hash string) (*Recording, error) {
	r, err := s.FindRecording(ctx, hash)
	if r == nil && err == nil {
		return nil, &recordingError{hash: hash, err: ErrNotFound}
	}
	return r, err
}

// FindRecording is Recording with a miss reported as nil and no error:
// every live call looks its recording up first and misses, and the
// error would be made for nothing.
func (s *Store) FindRecording(ctx context.Context, hash string) (*Recording, error) {
	if err := validID("recording hash", hash); err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	var r *Recording
	if v := s.jr.recording(hash); v != nil { // written, not yet applied
		r = &Recording{}
		if err := decode(recordingKey(hash), v, r); err != nil {
			return nil, &recordingError{hash: hash, err: err}
		}
		return r, nil
	}
	if s.recf.absent(hash) { // a live call's miss, answered without Badger
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, nil
	}
	// Badger holds every recording the journal no longer does (the
	// applier commits a record before it leaves the overlay): no need to
	// apply the journal first.
	err := s.viewRaw(ctx, func(txn *badger.Txn) error {
		key := recordingKey(hash)
		it, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return asDamage(key, err)
		}
		r = &Recording{} // only a hit allocates one: a live call misses
		return decodeRecording(txn, it, key, r)
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, &recordingError{hash: hash, err: err}
	}
	return r, nil
}

// recordingError is "read recording HASH: ERR", formatted when read: a
// miss, which every live call makes, then costs one small allocation.
type recordingError struct {
	hash string
	err  error
}

func (e *recordingError) Error() string { return "read recording " + e.hash + ": " + e.err.Error() }
func (e *recordingError) Unwrap() error { return e.err }

// RecordingStamp returns a stamp of the recording stored under hash that
// changes whenever the recording is replaced (its commit's version), or
// ErrNotFound. A reader that keeps what it decoded from a recording (a
// replaying proxy) checks that its copy is current without reading the
// recording again.
func (s *Store) RecordingStamp(ctx context.Context, hash string) (uint64, error) {
	_, stamp, err := s.recordingStamped(ctx, hash, false)
	return stamp, err
}

// RecordingWithStamp is Recording with the recording's stamp
// (RecordingStamp), read together.
func (s *Store) RecordingWithStamp(ctx context.Context, hash string) (*Recording, uint64, error) {
	return s.recordingStamped(ctx, hash, true)
}

func (s *Store) recordingStamped(ctx context.Context, hash string, read bool) (*Recording, uint64, error) {
	if err := validID("recording hash", hash); err != nil {
		return nil, 0, fmt.Errorf("read recording: %w", err)
	}
	key := recordingKey(hash)
	var r *Recording
	var stamp uint64
	err := s.view(ctx, func(txn *badger.Txn) error {
		it, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return asDamage(key, err)
		}
		stamp = it.Version()
		if !read {
			return nil
		}
		r = &Recording{}
		return decodeRecording(txn, it, key, r)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read recording %s: %w", hash, err)
	}
	return r, stamp, nil
}

// decodeRecording decodes the recording whose r/<hash> entry is it, where
// it is (resolveRecording).
func decodeRecording(txn *badger.Txn, it *badger.Item, key []byte, r *Recording) error {
	var derr error
	if err := it.Value(func(val []byte) error {
		v, err := resolveRecording(txn, key, val)
		if err == nil {
			err = decode(key, v, r)
		}
		derr = err
		return nil
	}); err != nil {
		return asDamage(key, err)
	}
	return derr
}
