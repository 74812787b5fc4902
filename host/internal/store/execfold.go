package store

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// An execution record (t/<task>/e/<exec>) written by the apply
// transaction that created its task (Begin) and ended it holds two more
// parts (layout 9): the execution's last checkpoint, which then has no
// t/k entry, and the recordings the task linked in that transaction,
// which then have no t/h entry. Badger spends per entry, and a short run
// is one transaction. Later writes keep entries of their own (a later
// checkpoint a t/k, later links a t/h), which readers prefer or add:
// the folded parts are what the creating transaction wrote. A rewrite of
// the record carries its folded parts over (carryFolded).
//
// The parts are the record's last JSON fields:
//
//	{…the execution…,"checkpoint":{…},"links":["<hash>",…]}
//
// Neither name is a field of Execution, and a string cannot hold the
// quote before it unescaped: the first ,"checkpoint": (else ,"links":[)
// of a record starts its folded parts.
const (
	foldCheckpoint = `,"checkpoint":`
	foldLinks      = `,"links":[`
)

// foldStart is where the folded parts of the execution value val start,
// -1 if it has none.
func foldStart(val []byte) int {
	if i := bytes.Index(val, []byte(foldCheckpoint)); i >= 0 {
		return i
	}
	return bytes.Index(val, []byte(foldLinks))
}

// foldedTail is the folded parts of the execution value val (from
// foldStart to the closing brace, excluded), nil if it has none; with
// linksOnly, its links part only.
func foldedTail(val []byte, linksOnly bool) []byte {
	i := foldStart(val)
	if linksOnly {
		i = bytes.Index(val, []byte(foldLinks))
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
func appendFolded(b, ev, cp []byte, links []string, tail []byte) []byte {
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
	return append(append(b, tail...), '}')
}

// foldedSize is how many bytes appendFolded appends at most.
func foldedSize(ev, cp []byte, links []string, tail []byte) int {
	n := len(ev) + len(foldCheckpoint) + len(cp) + len(foldLinks) + len(tail) + 2
	for _, h := range links {
		n += len(h) + 3
	}
	return n
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
