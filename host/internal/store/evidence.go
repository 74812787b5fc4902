package store

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// A level-0 table that is missing, or whose index is damaged, may have
// held any key: level 0 keeps no key order between its tables. What it
// held is still written elsewhere, though: every value over the value
// threshold went to a value log, with its key and commit version, and
// the log outlives the table. A logged write (key, version) whose
// version no sound table or write-ahead log holds for any key, and that
// no newer version of its key supersedes, lay in a lost table. Those
// keys are lost; the others are not. A transaction writes values of one
// task (every task write carries a record over the threshold), so a
// task that lost a write is named by its logged ones; keys whose
// values are small are derived (indexes, rebuilt from the records) or
// written beside a logged one.

// logEvidence returns the keys lost with level-0 tables that left no
// key range, learned from the value logs in dir against the sound
// tables (paths) and write-ahead logs. ok is false when the logs give no
// evidence (no logged write is unaccounted for), so the caller keeps
// treating every key as suspect rather than none.
func logEvidence(dir string, tables []string) (lost [][]byte, ok bool, err error) {
	defer recoverDamage(&err)
	versions := map[uint64]struct{}{}
	newest := map[string]uint64{}
	note := func(key []byte, pass int) {
		ts := y.ParseTs(key)
		if pass == 0 {
			versions[ts] = struct{}{}
			return
		}
		k := string(y.ParseKey(key))
		if v, ok := newest[k]; ok && ts > v {
			newest[k] = ts
		}
	}
	mems, vlogs, err := logFiles(dir)
	if err != nil {
		return nil, false, err
	}
	scanAll := func(pass int) error {
		for _, path := range tables {
			if err := eachTableKey(path, func(k []byte) { note(k, pass) }); err != nil {
				return err
			}
		}
		for _, path := range mems {
			if err := eachLogKey(path, func(k []byte, _ byte) { note(k, pass) }); err != nil {
				return err
			}
		}
		return nil
	}
	if err := scanAll(0); err != nil {
		return nil, false, err
	}
	// Logged writes of versions nothing sound holds: candidates.
	cand := map[string]uint64{}
	for _, path := range vlogs {
		err := eachLogKey(path, func(k []byte, meta byte) {
			if meta&walBitFinTxn != 0 || bytes.HasPrefix(k, []byte("!badger!")) || len(k) <= 8 {
				return
			}
			ts := y.ParseTs(k)
			if _, held := versions[ts]; held {
				return
			}
			if key := string(y.ParseKey(k)); ts > cand[key] {
				cand[key] = ts
			}
		})
		if err != nil {
			return nil, false, err
		}
	}
	if len(cand) == 0 {
		return nil, false, nil
	}
	for k := range cand {
		newest[k] = 0
	}
	if err := scanAll(1); err != nil {
		return nil, false, err
	}
	for k, ts := range cand {
		if newest[k] < ts {
			lost = append(lost, []byte(k))
		}
	}
	return lost, len(lost) > 0, nil
}

// logFiles lists dir's write-ahead logs and value logs.
func logFiles(dir string) (mems, vlogs []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case ".mem":
			mems = append(mems, filepath.Join(dir, e.Name()))
		case ".vlog":
			vlogs = append(vlogs, filepath.Join(dir, e.Name()))
		}
	}
	return mems, vlogs, nil
}

// eachTableKey calls fn with every key (version included) of a sound
// table.
func eachTableKey(path string, fn func(key []byte)) (err error) {
	defer recoverDamage(&err)
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	t, err := table.OpenTable(mf, table.Options{ReadOnly: true, ChkMode: options.NoVerification, Compression: options.None})
	if err != nil {
		return err
	}
	defer t.MmapFile.Close(-1)
	it := t.NewIterator(0)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		fn(it.Key())
	}
	return nil
}

// eachLogKey calls fn with the key (version included) and meta of every
// whole entry of a write-ahead or value log, up to its first torn or
// damaged entry.
func eachLogKey(path string, fn func(key []byte, meta byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if _, err := br.Discard(walHeaderSize); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	left := info.Size() - walHeaderSize
	var buf []byte
	for {
		n, meta, key, _, ok, err := walEntry(br, &buf, left)
		if err != nil || !ok || len(key) == 0 {
			return err
		}
		left -= int64(n)
		fn(key, meta)
	}
}
