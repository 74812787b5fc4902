package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
	"google.golang.org/protobuf/proto"
)

// A reader's snapshot is its own copy, so damage found in it can be cut
// out before Badger opens it: a table whose checksum fails, or that the
// MANIFEST names but that is missing, is left out of the snapshot's
// MANIFEST, and the keys it may have held are remembered (Store.lost),
// so that reads of them fail with a *DamageError instead of returning
// less, or older, data. A MANIFEST that does not replay is rebuilt from
// the tables present (every one at level 0: keys carry versions, so
// reads stay right). Badger itself skips blocks whose checksum fails
// without a word, which is why tables are checked here, whole.

// repairSnapshot checks the snapshot in dir and cuts out what is
// damaged; it returns what was lost.
func repairSnapshot(dir string) ([]lostFile, error) {
	manifest, mErr := readManifest(dir)
	var lost []lostFile
	if mErr != nil {
		// Rebuild: every table present, at level 0.
		lost = append(lost, lostFile{name: badger.ManifestFilename, reason: mErr, keys: keyRange{lo: []byte{}, hi: []byte{}}})
		manifest = map[uint64]int{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if id, ok := table.ParseFileID(e.Name()); ok {
				manifest[id] = 0
			}
		}
	}
	type tableRange struct {
		id    uint64
		level int
		keys  keyRange
	}
	var good []tableRange
	type bad struct {
		id     uint64
		level  int
		blocks []keyRange // the damaged blocks' keys, if the index could be read
		reason error
	}
	var bads []bad
	var unknown []lostFile
	ids := make([]uint64, 0, len(manifest))
	for id := range manifest {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		level := manifest[id]
		path := filepath.Join(dir, table.IDToFilename(id))
		blocks, err := checkTable(path)
		if err != nil {
			bads = append(bads, bad{id: id, level: level, blocks: blocks, reason: err})
			continue
		}
		keys, err := tableKeys(path)
		if err != nil {
			bads = append(bads, bad{id: id, level: level, reason: err})
			continue
		}
		good = append(good, tableRange{id: id, level: level, keys: keys})
	}
	if len(bads) == 0 && mErr == nil {
		return nil, nil
	}
	for _, b := range bads {
		l := lostFile{name: table.IDToFilename(b.id), reason: b.reason}
		switch {
		case b.blocks != nil:
			// Rebuilt without its damaged blocks, the table stays: only
			// the damaged blocks' keys are lost.
			if err := rebuildTable(filepath.Join(dir, l.name)); err != nil {
				return nil, fmt.Errorf("rebuild %s: %w", l.name, err)
			}
			good = append(good, tableRange{id: b.id, level: b.level})
			for _, r := range b.blocks[1:] {
				lost = append(lost, lostFile{name: l.name, reason: b.reason, keys: r})
			}
			l.keys = b.blocks[0]
		case b.level > 0:
			// Tables of one level below 0 do not overlap: the lost one
			// lay in a gap between those left. Every gap is suspect.
			var level []keyRange
			for _, g := range good {
				if g.level == b.level {
					level = append(level, g.keys)
				}
			}
			sort.Slice(level, func(i, j int) bool { return bytes.Compare(level[i].lo, level[j].lo) < 0 })
			var prev []byte
			for _, r := range level {
				lost = append(lost, lostFile{name: l.name, reason: b.reason, keys: keyRange{lo: prev, hi: r.lo}})
				prev = r.hi
			}
			l.keys = keyRange{lo: prev}
		default:
			// A level-0 table may have held any key: what it held is
			// learned from the value logs below, once every sound
			// table is known.
			unknown = append(unknown, l)
			continue
		}
		lost = append(lost, l)
	}
	if len(unknown) > 0 {
		var paths []string
		for _, g := range good {
			paths = append(paths, filepath.Join(dir, table.IDToFilename(g.id)))
		}
		keys, ok, err := logEvidence(dir, paths)
		if err != nil {
			return nil, fmt.Errorf("read the value logs for what %s held: %w", unknown[0].name, err)
		}
		for i, l := range unknown {
			if !ok {
				l.keys = keyRange{} // no evidence: every key is suspect
			} else {
				l.keys = keyRange{lo: []byte{}, hi: []byte{}} // the file itself; its keys follow
			}
			lost = append(lost, l)
			if i == 0 && ok {
				for _, k := range keys {
					lost = append(lost, lostFile{name: l.name, reason: l.reason, keys: keyRange{lo: k, hi: k}, exact: true})
				}
			}
		}
	}
	kept := map[uint64]int{}
	for _, g := range good {
		kept[g.id] = g.level
	}
	if err := writeManifest(dir, kept); err != nil {
		return nil, fmt.Errorf("rewrite %s: %w", badger.ManifestFilename, err)
	}
	for _, b := range bads {
		if _, ok := kept[b.id]; !ok {
			_ = os.Remove(filepath.Join(dir, table.IDToFilename(b.id)))
		}
	}
	return lost, nil
}

// readManifest replays dir's MANIFEST: table id → level.
func readManifest(dir string) (map[uint64]int, error) {
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, _, err := replayManifest(f)
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]int, len(m.Tables))
	for id, t := range m.Tables {
		out[id] = int(t.Level)
	}
	return out, nil
}

// replayManifest is badger.ReplayManifestFile, which panics on some
// damaged files, with the panic made an error.
func replayManifest(f *os.File) (m badger.Manifest, off int64, err error) {
	defer recoverDamage(&err)
	return badger.ReplayManifestFile(f, 0, badger.DefaultOptions("").WithLogger(nil))
}

// checkTable opens a table and reads every block, checking its
// checksum. It returns the key ranges of the blocks that fail (a block
// spans from its first key to the next block's), or nil ranges with an
// error when the table cannot be opened at all (its index is damaged, or
// it is missing).
func checkTable(path string) (bad []keyRange, err error) {
	defer recoverDamage(&err)
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("missing (the MANIFEST names it)")
		}
		return nil, err
	}
	if len(mf.Data) == 0 {
		return nil, errors.New("empty")
	}
	t, err := table.OpenTable(mf, table.Options{ReadOnly: true, ChkMode: options.OnBlockRead, Compression: options.None})
	if err != nil {
		// The mapping is left to the process's end: OpenTable may have
		// closed it already, and a second unmap could hit another one.
		return nil, errors.New("unreadable table index (checksum mismatch)")
	}
	// Not DecrRef: at zero references it deletes the file.
	defer t.MmapFile.Close(-1)
	// Every block's first key, from the index; seeking to one reads
	// (and checks) that block, and fails if it is damaged.
	bases := t.KeySplits(math.MaxInt32, nil)
	it := t.NewIterator(0)
	defer it.Close()
	for i, base := range bases {
		// A damaged block is skipped: the seek lands in the next one.
		it.Seek([]byte(base))
		if it.Valid() && bytes.Equal(it.Key(), []byte(base)) {
			continue
		}
		hi := t.Biggest()
		if i+1 < len(bases) {
			hi = []byte(bases[i+1])
		}
		bad = append(bad, keyRange{lo: slices.Clone(y.ParseKey([]byte(base))), hi: slices.Clone(y.ParseKey(hi))})
	}
	if len(bad) > 0 {
		return bad, fmt.Errorf("checksum mismatch in %d of its %d blocks", len(bad), len(bases))
	}
	return nil, nil
}

// writeManifest replaces dir's MANIFEST with one that creates exactly
// the given tables (id → level), in Badger's format: magic, then one
// change set with its length and CRC.
func writeManifest(dir string, tables map[uint64]int) error {
	var set pb.ManifestChangeSet
	ids := make([]uint64, 0, len(tables))
	for id := range tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		set.Changes = append(set.Changes, &pb.ManifestChange{Id: id, Op: pb.ManifestChange_CREATE,
			Level: uint32(tables[id]), Compression: uint32(options.None)})
	}
	body, err := proto.Marshal(&set)
	if err != nil {
		return err
	}
	buf := []byte{'B', 'd', 'g', 'r', 0, 0, 0, manifestVersion}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
	buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	buf = append(buf, body...)
	tmp := filepath.Join(dir, badger.ManifestFilename+".repair")
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, badger.ManifestFilename))
}

// manifestVersion is Badger's MANIFEST format version (badgerMagicVersion
// in badger/v4's manifest.go).
const manifestVersion = 8

// tableKeys returns the smallest and biggest key of a sound table.
func tableKeys(path string) (keys keyRange, err error) {
	defer recoverDamage(&err)
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return keys, err
	}
	t, err := table.OpenTable(mf, table.Options{ReadOnly: true, ChkMode: options.NoVerification, Compression: options.None})
	if err != nil {
		return keys, err
	}
	defer t.MmapFile.Close(-1)
	return keyRange{lo: slices.Clone(y.ParseKey(t.Smallest())), hi: slices.Clone(y.ParseKey(t.Biggest()))}, nil
}

// rebuildTable rewrites a table with the entries of its sound blocks
// only. Badger's iterators stop at a damaged block and skip the rest of
// its table, and a damaged block can hide a key's newest version; the
// rebuilt table reads whole.
func rebuildTable(path string) (err error) {
	defer recoverDamage(&err)
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	opts := table.Options{ReadOnly: true, ChkMode: options.OnBlockRead, Compression: options.None}
	t, err := table.OpenTable(mf, opts)
	if err != nil {
		return err
	}
	defer t.MmapFile.Close(-1)
	bopts := table.Options{BlockSize: 4 << 10, BloomFalsePositive: 0.01, TableSize: uint64(t.Size()) + 1<<20,
		Compression: options.None, ChkMode: options.OnBlockRead, AllocPool: z.NewAllocatorPool(1)}
	b := table.NewTableBuilder(bopts)
	defer b.Close()
	bases := t.KeySplits(math.MaxInt32, nil)
	it := t.NewIterator(0)
	defer it.Close()
	for i, base := range bases {
		var next []byte
		if i+1 < len(bases) {
			next = []byte(bases[i+1])
		}
		it.Seek([]byte(base))
		if !it.Valid() || !bytes.Equal(it.Key(), []byte(base)) {
			continue // the damaged block
		}
		for ; it.Valid() && (next == nil || y.CompareKeys(it.Key(), next) < 0); it.Next() {
			v := it.ValueCopy()
			b.Add(slices.Clone(it.Key()), v, 0)
		}
	}
	tmpDir, err := os.MkdirTemp(filepath.Dir(path), "rebuild-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, filepath.Base(path))
	nt, err := table.CreateTable(tmp, b)
	if err != nil {
		return err
	}
	_ = nt.MmapFile.Close(-1)
	return os.Rename(tmp, path)
}
