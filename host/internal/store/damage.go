package store

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
)

// ErrDamaged marks a read that failed because part of the store is
// damaged: a table or value log whose checksum fails, a missing or
// truncated file, an unreadable MANIFEST. `sextant store check` says
// what is damaged; `sextant store salvage` copies what is not.
var ErrDamaged = errors.New("store is damaged")

// DamageError says which part of the store could not be read and why.
// It matches ErrDamaged.
type DamageError struct {
	File string // the damaged file (000012.sst, 000003.vlog, MANIFEST), "" when Badger does not say
	Task string // the task whose data could not be read, "" when not one task's
	Key  string // the key being read, printable, "" when unknown
	Err  error  // what Badger or the decoder reported
}

// Error does not name the task: the operation around it does ("read
// task …", SkippedError).
func (e *DamageError) Error() string {
	var b strings.Builder
	b.WriteString("damaged store")
	if e.File != "" {
		b.WriteString(" file " + e.File)
	}
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Key != "" && !strings.Contains(msg, e.Key) {
		b.WriteString(" (key " + e.Key + ")")
	}
	if msg != "" {
		b.WriteString(": " + msg)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrDamaged) true.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

// Unwrap returns the underlying error.
func (e *DamageError) Unwrap() error { return e.Err }

// SkippedError is the error of a listing or export that went on past
// damaged tasks: everything else was listed or written; Skipped says
// what was left out. It matches ErrDamaged.
type SkippedError struct {
	Op      string         // "list tasks", "export"
	Skipped []*DamageError // one per task (or index) left out
}

func (e *SkippedError) Error() string {
	noun := "tasks"
	if len(e.Skipped) == 1 {
		noun = "task"
	}
	first := e.Skipped[0].Error()
	if e.Skipped[0].Task != "" {
		first = fmt.Sprintf("task %q: %s", e.Skipped[0].Task, first)
	}
	return fmt.Sprintf("%s: left out %d damaged %s (first: %s); run sextant store check, and sextant store salvage --to DIR to copy what is readable",
		e.Op, len(e.Skipped), noun, first)
}

// Is makes errors.Is(err, ErrDamaged) true.
func (e *SkippedError) Is(target error) bool { return target == ErrDamaged }

// fileInMessage finds the store file Badger names in an error or panic
// message: a table or value log by name, or a value pointer's file id.
var fileInMessage = regexp.MustCompile(`(\d{6}\.(?:sst|vlog|mem))|Fid:(\d+)|(?i)(manifest)|for table (\d+)`)

func damagedFile(msg string) string {
	m := fileInMessage.FindStringSubmatch(msg)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return m[1]
	case m[2] != "":
		n, _ := strconv.Atoi(m[2])
		return fmt.Sprintf("%06d.vlog", n)
	case m[4] != "":
		n, _ := strconv.Atoi(m[4])
		return fmt.Sprintf("%06d.sst", n)
	}
	return "MANIFEST"
}

// asDamage turns an error of a Badger read into a *DamageError (unless
// it is one already, or not about the data: a cancelled context, a
// missing key, a closed store).
func asDamage(key []byte, err error) error {
	var de *DamageError
	if err == nil || errors.As(err, &de) {
		return err
	}
	d := &DamageError{File: damagedFile(err.Error()), Err: err}
	if key != nil {
		d.Key = printableKey(key)
		if task, _, ok := parseTaskSub(key); ok {
			d.Task = task
		}
	}
	return d
}

// recoverDamage turns a panic inside Badger (which panics on some
// corrupt tables instead of returning an error) into a *DamageError
// naming the file when the panic text does. Use it deferred:
//
//	defer recoverDamage(&err)
func recoverDamage(err *error) {
	r := recover()
	if r == nil {
		return
	}
	msg := fmt.Sprint(r)
	file := damagedFile(msg)
	if file == "" {
		file = damagedFile(string(debug.Stack()))
	}
	first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	if len(first) > 200 {
		first = first[:200] + "…"
	}
	*err = &DamageError{File: file, Err: fmt.Errorf("badger failed reading it: %s", first)}
}

// keyRange is a span of keys [lo, hi], both inclusive, without Badger's
// version suffix; a nil bound is open.
type keyRange struct{ lo, hi []byte }

// overlaps reports whether any key with the prefix p lies in r.
func (r keyRange) overlaps(p []byte) bool {
	if r.hi != nil && bytes.Compare(p, r.hi) > 0 {
		return false
	}
	if r.lo != nil && !bytes.HasPrefix(r.lo, p) && bytes.Compare(p, r.lo) < 0 {
		return false
	}
	return true
}

// lostFile is a table that a reader's snapshot left out because it is
// damaged or missing, with the keys it may have held.
type lostFile struct {
	name   string
	keys   keyRange
	reason error
	// exact: keys is one key known to be lost (learned from the value
	// logs), not a range that may have held some.
	exact bool
}

// lostFor returns the damage of a read of the keys under prefix: the
// first left-out table whose keys may include some of them.
func (s *Store) lostFor(prefix []byte) *DamageError {
	for _, l := range s.lost {
		if l.keys.overlaps(prefix) {
			d := &DamageError{File: l.name, Err: l.reason}
			if rest, ok := bytes.CutPrefix(prefix, []byte(pTask)); ok && bytes.HasSuffix(rest, []byte("/")) {
				d.Task = string(rest[:len(rest)-1])
			} else {
				d.Key = printableKey(prefix)
			}
			return d
		}
	}
	return nil
}

// Damage lists the files a read-only Open left out of its snapshot
// because they are damaged or missing. Reads of keys they may have held
// fail with a *DamageError; everything else reads as usual.
func (s *Store) Damage() []*DamageError {
	out := []*DamageError{}
	for i, l := range s.lost {
		if i > 0 && s.lost[i-1].name == l.name {
			continue // one file, several key ranges
		}
		out = append(out, &DamageError{File: l.name, Err: l.reason})
	}
	return out
}

// taskDamage returns err as the damage of task id, or nil if err is not
// damage.
func taskDamage(id string, err error) *DamageError {
	var d *DamageError
	if errors.As(err, &d) {
		c := *d
		c.Task = id
		return &c
	}
	if errors.Is(err, ErrDamaged) {
		return &DamageError{Task: id, Err: err}
	}
	return nil
}
