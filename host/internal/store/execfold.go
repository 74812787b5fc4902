package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// An execution record (t/<task>/e/<exec>) written by the apply
// transaction that created its task and execution (Begin) holds more
// parts (layout 9): the execution's last checkpoint, which then has no
// t/k entry; the recordings the task linked in that transaction, which
// then have no t/h entry; and the recordings the task made in it, whose
// r/<hash> entries then only name the record (recordingIndex), small
// enough for Badger to keep in its tree, not its value log. Badger
// spends per entry, and a short run is one transaction. Later writes
// keep entries of their own (a later checkpoint a t/k, later links a
// t/h, a recording written again its whole r/<hash>), which readers
// prefer or add: the folded parts are what the creating transaction
// wrote. A rewrite of the record carries its folded parts over.
//
// The parts are the record's last JSON fields, each optional:
//
//	{…the execution…,"checkpoint":{…},"links":["<hash>",…],"recordings":{"<hash>":{…},…}}
//
// No name is a field of Execution, a string cannot hold the quote before
// a name unescaped, and neither a checkpoint nor a link holds a name:
// the first ,"recordings":{ starts the recordings, and before it the
// first ,"checkpoint": and ,"links":[ start theirs.
const (
	foldCheckpoint = `,"checkpoint":`
	foldLinks      = `,"links":[`
	foldRecordings = `,"recordings":{`
)

// foldAt is where the parts of the execution value val start: its
// checkpoint, links and recordings (-1 for a part it lacks).
func foldAt(val []byte) (cp, links, recs int) {
	recs = bytes.Index(val, []byte(foldRecordings))
	head := val
	if recs >= 0 {
		head = val[:recs]
	}
	return bytes.Index(head, []byte(foldCheckpoint)), bytes.Index(head, []byte(foldLinks)), recs
}

// foldStart is where the folded parts of the execution value val start,
// -1 if it has none.
func foldStart(val []byte) int {
	cp, links, recs := foldAt(val)
	for _, i := range [...]int{cp, links, recs} {
		if i >= 0 {
			return i
		}
	}
	return -1
}

// foldedTail is the folded parts of the execution value val (from
// foldStart to the closing brace, excluded), nil if it has none;
// without the checkpoint, with noCheckpoint (its writer writes a t/k).
func foldedTail(val []byte, noCheckpoint bool) []byte {
	i := foldStart(val)
	if noCheckpoint {
		_, links, recs := foldAt(val)
		i = links
		if i < 0 {
			i = recs
		}
	}
	if i < 0 || val[len(val)-1] != '}' {
		return nil
	}
	return val[i : len(val)-1]
}

// appendFolded appends to b the execution value ev (schema byte and
// JSON object) with folded parts: the checkpoint value cp (schema byte
// and JSON; nil for none), links, and tail (a foldedTail, carried over).
// An execution value that is not an object is appended as it is.
func appendFolded(b, ev, cp []byte, links []string, recs []*jrec, tail []byte) []byte {
	if len(ev) < 2 || ev[len(ev)-1] != '}' {
		return append(b, ev...)
	}
	b = append(b, ev[:len(ev)-1]...)
	if len(cp) > 1 {
		b = append(append(b, foldCheckpoint...), cp[1:]...)
	}
	if len(links) > 0 {
		b = append(b, foldLinks...)
		for i, h := range links {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, '"'), h...), '"') // an id: nothing to escape
		}
		b = append(b, ']')
	}
	if len(recs) > 0 {
		b = append(b, foldRecordings...)
		for i, r := range recs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, '"'), r.hash...), `":`...)
			b = append(b, r.val[1:]...)
		}
		b = append(b, '}')
	}
	return append(append(b, tail...), '}')
}

// foldedSize is how many bytes appendFolded appends at most.
func foldedSize(ev, cp []byte, links []string, recs []*jrec, tail []byte) int {
	n := len(ev) + len(foldCheckpoint) + len(cp) + len(foldLinks) + len(foldRecordings) + len(tail) + 4
	for _, h := range links {
		n += len(h) + 3
	}
	for _, r := range recs {
		n += len(r.hash) + len(r.val) + 4
	}
	return n
}

// recordingIndex is the value of r/<hash> for a recording the execution
// record of exec holds: "<task>/<exec>", a JSON string (a recording is
// an object), 57 bytes for ids NewID makes.
func recordingIndex(b []byte, task, exec string) []byte {
	b = append(append(b, schemaVersion, '"'), task...)
	return append(append(append(b, '/'), exec...), '"')
}

// recordingIndexSize is len(recordingIndex(nil, task, exec)).
func recordingIndexSize(task, exec string) int { return 4 + len(task) + len(exec) }

// resolveRecording returns the recording value (schema byte and JSON)
// of r/<hash> whose entry holds val: val itself, or for an index
// (recordingIndex) the recording the execution record it names holds.
// The result may be val, valid as long as val is.
func resolveRecording(txn *badger.Txn, key, val []byte) ([]byte, error) {
	if len(val) < 2 || val[0] != schemaVersion || val[1] != '"' {
		return val, nil
	}
	damage := func(err error) error {
		return &DamageError{Key: printableKey(key), Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
	}
	var at string
	if err := json.Unmarshal(val[1:], &at); err != nil {
		return nil, damage(err)
	}
	task, exec, _ := strings.Cut(at, "/")
	if validID("task id", task) != nil || validID("execution id", exec) != nil {
		return nil, damage(fmt.Errorf("names no execution: %q", at))
	}
	rkey := execKey(task, exec)
	var out []byte
	err := getWith(txn, rkey, func(v []byte) error {
		_, _, i := foldAt(v)
		if i < 0 || v[len(v)-1] != '}' {
			return fmt.Errorf("the record of execution %q of task %q holds no recordings", exec, task)
		}
		var recs map[string]json.RawMessage
		if err := json.Unmarshal(v[i+len(foldRecordings)-1:len(v)-1], &recs); err != nil {
			d := &DamageError{Task: task, Key: printableKey(rkey), Err: fmt.Errorf("decode %s: %w", printableKey(rkey), err)}
			return d
		}
		js, ok := recs[string(key[len(pRec):])]
		if !ok {
			return fmt.Errorf("the record of execution %q of task %q does not hold it", exec, task)
		}
		out = append([]byte{schemaVersion}, js...)
		return nil
	})
	if err != nil {
		var d *DamageError
		if errors.As(err, &d) {
			return nil, err
		}
		return nil, damage(err) // ErrNotFound too: the record holding it is gone
	}
	return out, nil
}

// folded is an execution record as readers decode it: the execution and
// its folded parts.
type folded struct {
	Execution
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	Links      []string    `json:"links,omitempty"`
}

// decodeFolded decodes the execution record at key, checking the hashes
// its links name (a bad one is a *DamageError).
func decodeFolded(key, val []byte, f *folded) error {
	if err := decode(key, val, f); err != nil {
		return err
	}
	return checkFoldedLinks(key, f.Links)
}

// decodeTreeExec is decodeFolded for a reader of task's tree: the
// execution without reflection (execDecoder, sharing the task's id),
// the parts it holds the encoding/json way.
func decodeTreeExec(key, val []byte, task string, f *folded) error {
	i := foldStart(val)
	if i < 0 && len(val) > 0 && val[0] == schemaVersion {
		// No part found where appendFolded puts them: a record that has
		// them written otherwise (spaced) is read the encoding/json way.
		d := execDecoder{b: string(val[1:])}
		if d.execution(&f.Execution, task, "") && len(d.b) == 0 {
			return nil
		}
		*f = folded{}
	}
	if i >= 0 && val[0] == schemaVersion {
		d := execDecoder{b: string(val[1:i]) + "}"}
		if d.execution(&f.Execution, task, "") && len(d.b) == 0 {
			var p struct {
				Checkpoint *Checkpoint `json:"checkpoint"`
				Links      []string    `json:"links"`
			}
			if err := json.Unmarshal(append([]byte{'{'}, val[i+1:]...), &p); err != nil {
				d := &DamageError{Key: printableKey(key), Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
				d.Task, _, _ = parseTaskSub(key)
				return d
			}
			f.Checkpoint, f.Links = p.Checkpoint, p.Links
			return checkFoldedLinks(key, f.Links)
		}
		*f = folded{}
	}
	return decodeFolded(key, val, f)
}

func checkFoldedLinks(key []byte, links []string) error {
	for _, h := range links {
		if err := validID("recording hash", h); err != nil {
			d := &DamageError{Key: printableKey(key), Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
			d.Task, _, _ = parseTaskSub(key)
			return d
		}
	}
	return nil
}

// foldedParts decodes the folded parts of the execution value js (after
// the schema byte) that start at i (foldStart): the checkpoint's JSON
// (nil for none) and the links.
func foldedParts(key, js []byte, i int) (json.RawMessage, []string, error) {
	var p struct {
		Checkpoint json.RawMessage `json:"checkpoint"`
		Links      []string        `json:"links"`
	}
	obj := append([]byte{'{'}, js[i+1:]...)
	if err := json.Unmarshal(obj, &p); err != nil {
		d := &DamageError{Key: printableKey(key), Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
		d.Task, _, _ = parseTaskSub(key)
		return nil, nil, d
	}
	return p.Checkpoint, p.Links, checkFoldedLinks(key, p.Links)
}
