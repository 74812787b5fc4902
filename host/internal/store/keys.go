package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"
)

// Key prefixes. The layout is documented in doc.go; keep the two in step.
const (
	pTask      = "t/"
	pIndex     = "x/"
	pTime      = "x/time/"
	pPipe      = "x/pipe/"
	pTag       = "x/tag/"
	pRewardTag = "x/rtag/"
	pRec       = "r/"
	pStrategy  = "g/"
	pColl      = "c/"
	keyMeta    = "m/meta"
)

// Sub-keys beneath t/<task>/. Their letters sort in the order a task's
// tree is read: the task, its executions, recording links, checkpoints,
// rewards, spans.
const (
	subTask       = 'a'
	subExec       = 'e'
	subLink       = 'h'
	subCheckpoint = 'k'
	subReward     = 'r'
	subSpan       = 's'
)

func taskPrefix(task string) []byte { return taskPrefixRoom(task, 32) }

// taskPrefixRoom is taskPrefix with room for extra more bytes, so that a
// key built on it is one allocation.
func taskPrefixRoom(task string, extra int) []byte {
	return appendTaskPrefix(make([]byte, 0, len(pTask)+len(task)+1+extra), task)
}

// appendTaskPrefix appends taskPrefix(task) to b.
func appendTaskPrefix(b []byte, task string) []byte {
	b = append(b, pTask...)
	b = append(b, task...)
	return append(b, '/')
}

func taskSub(task string, sub byte) []byte { return append(taskPrefix(task), sub) }

func taskKey(task string) []byte { return taskSub(task, subTask) }

func execKey(task, exec string) []byte {
	return append(append(taskSub(task, subExec), '/'), exec...)
}

func linkKey(task, hash string) []byte {
	return append(append(taskPrefixRoom(task, 2+len(hash)), subLink, '/'), hash...)
}

func checkpointKey(task, exec string) []byte {
	return append(append(taskSub(task, subCheckpoint), '/'), exec...)
}

func rewardPrefix(task string) []byte { return append(taskSub(task, subReward), '/') }

func rewardKey(task string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(rewardPrefix(task), seq)
}

func spanPrefix(task, exec string) []byte {
	b := append(taskSub(task, subSpan), '/')
	b = append(b, exec...)
	return append(b, '/')
}

func spanKeyInto(b []byte, task, exec string, seq uint64) []byte {
	b = append(b, pTask...)
	b = append(b, task...)
	b = append(b, '/', subSpan, '/')
	b = append(b, exec...)
	b = append(b, '/')
	return binary.BigEndian.AppendUint64(b, seq)
}

// recordingKey is where a recording is; a write of one tells the
// recording filter first (noteRecording).
func recordingKey(hash string) []byte {
	return append(append(make([]byte, 0, len(pRec)+len(hash)), pRec...), hash...)
}

func strategyPrefix(name string) []byte {
	return append(append([]byte(pStrategy), name...), '/')
}

func strategyKey(name, version string) []byte { return append(strategyPrefix(name), version...) }

func collPrefix(name string) []byte { return append(append([]byte(pColl), name...), '/') }

// invTime orders newer times first in an ascending key scan.
func invTime(t time.Time) uint64 {
	n := t.UnixNano()
	if n < 0 {
		n = 0
	}
	return math.MaxUint64 - uint64(n)
}

func timeIndexKey(created time.Time, task string) []byte {
	return appendTimeIndexKey(make([]byte, 0, len(pTime)+8+len(task)), created, task)
}

// appendTimeIndexKey appends timeIndexKey(created, task) to b.
func appendTimeIndexKey(b []byte, created time.Time, task string) []byte {
	b = binary.BigEndian.AppendUint64(append(b, pTime...), invTime(created))
	return append(b, task...)
}

// fieldIndexKey is x/pipe/<pipeline>\0<inv-time><task> or x/tag/<tag>\0....
func fieldIndexKey(prefix, field string, created time.Time, task string) []byte {
	return appendFieldIndexKey(make([]byte, 0, len(prefix)+len(field)+1+8+len(task)), prefix, field, created, task)
}

// appendFieldIndexKey appends fieldIndexKey(prefix, field, created, task)
// to b.
func appendFieldIndexKey(b []byte, prefix, field string, created time.Time, task string) []byte {
	b = append(append(b, prefix...), field...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, invTime(created))
	return append(b, task...)
}

func fieldIndexPrefix(prefix, field string) []byte {
	return append(append([]byte(prefix), field...), 0)
}

// rewardTagKey is x/rtag/<tag>\0<task>: one of the task's rewards has the tag.
func rewardTagKey(tag, task string) []byte {
	return append(fieldIndexPrefix(pRewardTag, tag), task...)
}

// parseTaskSub splits t/<task>/<sub>... into the task and the remainder
// starting at <sub>.
func parseTaskSub(key []byte) (task string, sub []byte, ok bool) {
	if !bytes.HasPrefix(key, []byte(pTask)) {
		return "", nil, false
	}
	rest := key[len(pTask):]
	i := bytes.IndexByte(rest, '/')
	if i <= 0 || i+1 >= len(rest) {
		return "", nil, false
	}
	return string(rest[:i]), rest[i+1:], true
}

// parseSpanSub splits s/<exec>/<seq:8> into the execution and sequence.
func parseSpanSub(sub []byte) (exec string, seq uint64, ok bool) {
	if len(sub) < 2+1+1+8 || sub[0] != subSpan || sub[1] != '/' {
		return "", 0, false
	}
	rest := sub[2:]
	n := len(rest) - 8
	if rest[n-1] != '/' {
		return "", 0, false
	}
	return string(rest[:n-1]), binary.BigEndian.Uint64(rest[n:]), true
}

// validID checks the ids used inside keys (tasks, executions, recording
// hashes, strategy names and versions, collection names): 1 to 128
// characters of [A-Za-z0-9._:+-], starting with a letter or digit. No '/'
// and no NUL, so a key prefix never matches a longer id.
func validID(what, id string) error {
	if id == "" {
		return invalidf("%s is empty", what)
	}
	if len(id) > 128 {
		return invalidf("%s %.20q… is longer than 128 characters", what, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-' || c == ':' || c == '+'):
		case i == 0 && (c == '.' || c == '_' || c == '-' || c == ':' || c == '+'):
			return invalidf("%s %q must start with a letter or digit", what, id)
		default:
			return invalidf("%s %q has a bad character %q (use letters, digits and . _ - : +)", what, id, c)
		}
	}
	return nil
}

// validLabel checks pipeline names and tags, which appear in index keys:
// non-empty, at most 256 bytes of UTF-8 without control characters.
func validLabel(what, s string) error {
	if s == "" {
		return invalidf("%s is empty", what)
	}
	if len(s) > 256 {
		return invalidf("%s %.20q… is longer than 256 bytes", what, s)
	}
	if !utf8.ValidString(s) {
		return invalidf("%s %q is not UTF-8", what, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return invalidf("%s %q has a control character", what, s)
		}
	}
	return nil
}

// invalidError is a value the store refuses; it matches ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// A link entry, t/<task>/h/<hash>, says the task made or used recording
// <hash>. Since layout 7 its value may name more such recordings: the
// applier writes the links of one transaction's records as one entry.
// The value is then the schema byte and a JSON array of the other
// hashes; a link of one recording is empty, as before.

// linkValue is the value of a link entry that also names more.
func linkValue(more []string) []byte {
	if len(more) == 0 {
		return nil
	}
	n := 3
	for _, h := range more {
		n += len(h) + 3
	}
	b := append(make([]byte, 0, n), schemaVersion, '[')
	for i, h := range more {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), h...), '"') // an id: nothing to escape
	}
	return append(b, ']')
}

// appendLinks appends the hashes of the link entry key (whose sub-key is
// sub, h/<hash>) to hashes: its key's, then those its value names. A
// value that does not decode, or names a bad hash, is a *DamageError.
func appendLinks(hashes []string, key, sub, val []byte) ([]string, error) {
	hashes = append(hashes, string(sub[2:]))
	if len(val) == 0 {
		return hashes, nil
	}
	var more []string
	if err := decode(key, val, &more); err != nil {
		return hashes, err
	}
	for _, h := range more {
		if err := validID("recording hash", h); err != nil {
			d := &DamageError{Key: printableKey(key), Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
			d.Task, _, _ = parseTaskSub(key)
			return hashes, d
		}
	}
	return append(hashes, more...), nil
}

// sortLinks sorts and de-duplicates the hashes of a task's link entries,
// once more than one was named by an entry: readers list them as layout
// 6 did, one entry each, in key order.
func sortLinks(hashes []string, merged bool) []string {
	if !merged {
		return hashes
	}
	slices.Sort(hashes)
	return slices.Compact(hashes)
}

// setLinks links task to hashes (at least one) in one entry keyed by the
// first. What an entry at that key names already stays named: its value
// is the union.
func setLinks(txn *badger.Txn, w setter, task string, hashes []string) error {
	key := linkKey(task, hashes[0])
	more, err := keptLinks(txn, key, slices.Clip(hashes[1:]))
	if err != nil {
		return err
	}
	return w.Set(key, linkValue(more))
}

// keptLinks adds to more the hashes the link entry at key names beside
// its key's, if it is there. A value that does not decode is replaced,
// as any write replaced it before.
func keptLinks(txn *badger.Txn, key []byte, more []string) ([]string, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return more, nil
	}
	if err != nil {
		return nil, err
	}
	err = item.Value(func(val []byte) error {
		if len(val) == 0 {
			return nil
		}
		_, sub, _ := parseTaskSub(key)
		old, err := appendLinks(nil, key, sub, val)
		if err != nil {
			return nil
		}
		for _, h := range old[1:] {
			if h != old[0] && !slices.Contains(more, h) {
				more = append(more, h)
			}
		}
		return nil
	})
	if err != nil {
		return nil, asDamage(key, err)
	}
	return more, nil
}
