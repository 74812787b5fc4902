package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"strconv"
)

// Badger v4's write-ahead log (.mem) format, as memtable.go and
// structs.go write it: a 20-byte header (key id, IV), then entries of
// meta byte, user-meta byte, uvarint key length, value length and expiry,
// key, value, and a big-endian CRC-32C of all that. A transaction is its
// entries (meta bit 6, the commit version in the key's last 8 bytes)
// followed by a finishing entry (meta bit 7, the version as decimal text).
const (
	walHeaderSize = 20
	walBitTxn     = 1 << 6
	walBitFinTxn  = 1 << 7
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walEnd returns the offset after the last complete transaction in a
// write-ahead log: what Badger's own replay keeps. Badger's read-only
// mode refuses a log with anything after that offset (a live writer
// preallocates its log, a killed one may leave half an entry), so a
// snapshot copies the log only this far. The rules follow Badger's
// logFile.iterate; TestSnapshotWALEnd checks them against Badger.
// size is the log's length, which bounds every entry.
func walEnd(r io.Reader, size int64) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var hdr [walHeaderSize]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil
		}
		return 0, err
	}
	var (
		off, valid int64 = walHeaderSize, walHeaderSize
		lastCommit uint64
		buf        []byte
	)
	for {
		n, meta, key, val, ok, err := walEntry(br, &buf, size-off)
		if err != nil {
			return 0, err
		}
		if !ok || len(key) == 0 {
			return valid, nil
		}
		off += int64(n)
		switch {
		case meta&walBitTxn != 0:
			ts := uint64(0)
			if len(key) > 8 {
				ts = math.MaxUint64 - binary.BigEndian.Uint64(key[len(key)-8:])
			}
			if lastCommit == 0 {
				lastCommit = ts
			}
			if lastCommit != ts {
				return valid, nil
			}
		case meta&walBitFinTxn != 0:
			ts, err := strconv.ParseUint(string(val), 10, 64)
			if err != nil || ts != lastCommit {
				return valid, nil
			}
			lastCommit, valid = 0, off
		default:
			if lastCommit != 0 {
				return valid, nil
			}
			valid = off
		}
	}
}

// walEntry reads one entry. ok is false at the end of the valid log (a
// torn, zeroed or corrupt entry); err is an I/O error only.
func walEntry(br *bufio.Reader, buf *[]byte, left int64) (n int, meta byte, key, val []byte, ok bool, err error) {
	h := crc32.New(castagnoli)
	var head [2 + 3*binary.MaxVarintLen64]byte
	hn := 0
	readByte := func() (byte, bool) {
		b, e := br.ReadByte()
		if e != nil {
			if !errors.Is(e, io.EOF) {
				err = e
			}
			return 0, false
		}
		if hn < len(head) {
			head[hn] = b
		}
		hn++
		return b, true
	}
	uvarint := func() (uint64, bool) {
		var x uint64
		for s := uint(0); s < 64; s += 7 {
			b, ok := readByte()
			if !ok {
				return 0, false
			}
			x |= uint64(b&0x7f) << s
			if b < 0x80 {
				return x, true
			}
		}
		return 0, false
	}
	m, ok1 := readByte()
	_, ok2 := readByte()
	klen, ok3 := uvarint()
	vlen, ok4 := uvarint()
	_, ok5 := uvarint()
	if err != nil || !(ok1 && ok2 && ok3 && ok4 && ok5) || hn > len(head) {
		return 0, 0, nil, nil, false, err
	}
	if klen > 1<<16 || vlen > math.MaxUint32 || int64(hn)+int64(klen+vlen)+4 > left {
		return 0, 0, nil, nil, false, nil
	}
	size := int(klen + vlen)
	if cap(*buf) < size+4 {
		*buf = make([]byte, size+4)
	}
	b := (*buf)[:size+4]
	if _, e := io.ReadFull(br, b); e != nil {
		if errors.Is(e, io.EOF) || errors.Is(e, io.ErrUnexpectedEOF) {
			return 0, 0, nil, nil, false, nil
		}
		return 0, 0, nil, nil, false, e
	}
	h.Write(head[:hn])
	h.Write(b[:size])
	if h.Sum32() != binary.BigEndian.Uint32(b[size:]) {
		return 0, 0, nil, nil, false, nil
	}
	return hn + size + 4, m, b[:klen], b[klen:size], true, nil
}
