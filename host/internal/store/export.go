package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// The JSONL export format: one JSON object per line, each with a "type".
// The first line is a header; then, for each task (in the order Tasks
// lists them: newest first), the task, its executions, checkpoints (if
// asked for), rewards and spans, in key order; then the recordings the
// exported tasks made or used, by hash, each with the exported tasks
// linked to it. Records are the stored (already redacted) JSON with
// "type" (and, for spans, the task, execution and seq that the key holds)
// in front, so export → import → export gives the same bytes.
const (
	exportFormat  = "sextant-export"
	exportVersion = 1
	maxLine       = 256 << 20
)

// ExportOptions selects what Export writes.
type ExportOptions struct {
	Query Query // which tasks; the zero Query exports every task and every recording
	// Checkpoints adds each execution's latest checkpoint. A dataset for
	// replay does not need them; a backup of paused runs does.
	Checkpoints bool
}

// Counts says how many records of each type an export or import moved.
type Counts struct {
	Tasks, Executions, Spans, Rewards, Recordings, Checkpoints int
}

type exportHeader struct {
	Type    string `json:"type"`
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// Export writes tasks and what belongs to them as JSONL (see the format
// above).
func (s *Store) Export(ctx context.Context, w io.Writer, opt ExportOptions) (Counts, error) {
	var n Counts
	bw := bufio.NewWriterSize(w, 64<<10)
	hdr, _ := json.Marshal(exportHeader{Type: "header", Format: exportFormat, Version: exportVersion})
	bw.Write(hdr)
	bw.WriteByte('\n')

	links := map[string][]string{} // recording hash → exported tasks
	var (
		lines   []byte   // the task's lines so far
		hashes  []string // the task's recording links
		skipped []*DamageError
	)
	err := s.view(ctx, func(txn *badger.Txn) error {
		err := s.eachTaskTxn(ctx, txn, opt.Query, nil, &skipped, func(t *Task, _ string) error {
			// A task is written whole or not at all: its lines are
			// held until all of them were read.
			nt := n
			var err error
			lines, hashes, err = exportTaskTxn(ctx, txn, t.ID, opt.Checkpoints, lines[:0], hashes[:0], &nt)
			if d := taskDamage(t.ID, err); d != nil {
				skipped = append(skipped, d)
				return nil
			}
			if err != nil {
				return err
			}
			for _, h := range hashes {
				links[h] = append(links[h], t.ID)
			}
			n = nt
			_, err = bw.Write(lines)
			return err
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		return s.exportRecordings(ctx, txn, bw, opt.Query.isZero(), links, &n, &skipped)
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return n, fmt.Errorf("export: %w", err)
	}
	if len(skipped) > 0 {
		return n, &SkippedError{Op: "export", Skipped: skipped}
	}
	return n, nil
}

// exportTaskTxn appends the export lines of task id (its task,
// executions, checkpoints if asked, rewards and spans, in key order) to
// lines, and its recording links to hashes, counting them in n.
func exportTaskTxn(ctx context.Context, txn *badger.Txn, id string, checkpoints bool, lines []byte, hashes []string, n *Counts) ([]byte, []string, error) {
	var line []byte
	// The task's line waits for its body keys, which follow its record
	// (body.go): head is the record, body its fields.
	var head []byte
	var body [][]byte
	merged := false // a link entry named more than its key's recording
	flushTask := func() error {
		if head == nil {
			return nil
		}
		js, err := spliceBody(head, body)
		if err != nil {
			return &DamageError{Task: id, Err: err}
		}
		lines = append(spliceType(lines, "task", js), '\n')
		n.Tasks++
		head, body = nil, nil
		return nil
	}
	// The checkpoints execution records hold (execfold.go), by
	// execution: written once the t/k entries, which replace them, are
	// past.
	var folded []foldedCheckpoint
	flushFolded := func() {
		for _, c := range folded {
			if c.js != nil {
				lines = append(spliceType(lines, "checkpoint", c.js), '\n')
				n.Checkpoints++
			}
		}
		folded = folded[:0]
	}
	err := scanTxn(ctx, txn, taskPrefix(id), func(key, val []byte) error {
		_, sub, ok := parseTaskSub(key)
		if !ok {
			return fmt.Errorf("bad key %s", printableKey(key))
		}
		if sub[0] != subBody {
			if err := flushTask(); err != nil {
				return err
			}
		}
		if sub[0] > subCheckpoint {
			flushFolded()
		}
		if sub[0] == subLink {
			merged = merged || len(val) > 0
			var err error
			hashes, err = appendLinks(hashes, key, sub, val)
			return err
		}
		js, err := unseal(key, val)
		if err != nil {
			return err
		}
		line = line[:0]
		switch sub[0] {
		case subTask:
			head = bytes.Clone(js)
			return nil
		case subBody:
			f := bodyField(sub)
			if f == "" {
				return fmt.Errorf("unknown key %s", printableKey(key))
			}
			if head == nil {
				return &DamageError{Task: id, Err: fmt.Errorf("%s without its task record", printableKey(key))}
			}
			body = append(body, append(append(appendJSONString(nil, f), ':'), js...))
			return nil
		case subExec:
			if i := foldStart(js); i >= 0 {
				cp, links, err := foldedParts(key, js, i)
				if err != nil {
					return err
				}
				if len(links) > 0 {
					merged = true
					hashes = append(hashes, links...)
				}
				if checkpoints && cp != nil {
					folded = append(folded, foldedCheckpoint{exec: string(sub[2:]), js: cp})
				}
				line = append(spliceType(line, "execution", js[:i:i]), '}')
			} else {
				line = spliceType(line, "execution", js)
			}
			n.Executions++
		case subCheckpoint:
			if !checkpoints {
				return nil
			}
			for i := range folded {
				if folded[i].exec == string(sub[2:]) {
					folded[i].js = nil // its own entry replaces it
				}
			}
			line = spliceType(line, "checkpoint", js)
			n.Checkpoints++
		case subReward:
			line = spliceType(line, "reward", js)
			n.Rewards++
		case subSpan:
			exec, _, ok := parseSpanSub(sub)
			if !ok {
				return fmt.Errorf("bad span key %s", printableKey(key))
			}
			// A batch is a line per span, as a single span is.
			start := len(line)
			err := eachSpanJSON(key, val, func(seq uint64, obj []byte) error {
				if len(line) > start {
					line = append(line, '\n')
				}
				line = append(line, `{"type":"span","task":"`...)
				line = append(line, id...)
				line = append(line, `","execution":"`...)
				line = append(line, exec...)
				line = append(line, `","seq":`...)
				line = strconv.AppendUint(line, seq, 10)
				line = appendRest(line, obj)
				n.Spans++
				return nil
			})
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown key %s", printableKey(key))
		}
		line = append(line, '\n')
		lines = append(lines, line...)
		return nil
	})
	if err == nil {
		err = flushTask()
		flushFolded()
	}
	return lines, sortLinks(hashes, merged), err
}

// foldedCheckpoint is a checkpoint an execution record holds, as JSON
// (nil once a t/k entry of the execution replaced it).
type foldedCheckpoint struct {
	exec string
	js   []byte
}

// exportRecordings writes the recordings (all, or those linked); a
// damaged one is added to skipped and left out.
func (s *Store) exportRecordings(ctx context.Context, txn *badger.Txn, w io.Writer, all bool, links map[string][]string, n *Counts, skipped *[]*DamageError) error {
	write := func(hash string, key, val []byte) error {
		val, err := resolveRecording(txn, key, val)
		if d := (*DamageError)(nil); errors.As(err, &d) {
			*skipped = append(*skipped, d)
			return nil
		}
		js, err := unseal(key, val)
		if errors.Is(err, ErrDamaged) {
			*skipped = append(*skipped, &DamageError{Key: printableKey(key), Err: err})
			return nil
		}
		if err != nil {
			return err
		}
		line := make([]byte, 0, len(js)+64)
		line = spliceType(line, "recording", js)
		if tasks := links[hash]; len(tasks) > 0 {
			slices.Sort(tasks)
			line = line[:len(line)-1] // the closing brace
			line = append(line, `,"tasks":[`...)
			for i, t := range tasks {
				if i > 0 {
					line = append(line, ',')
				}
				line = appendJSONString(line, t)
			}
			line = append(line, "]}"...)
		}
		line = append(line, '\n')
		n.Recordings++
		_, err = w.Write(line)
		return err
	}
	if all {
		return scanTolerant(ctx, txn, []byte(pRec), skipped, func(key, val []byte) error {
			return write(string(key[len(pRec):]), key, val)
		})
	}
	hashes := make([]string, 0, len(links))
	for h := range links {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	for _, h := range hashes {
		key := recordingKey(h)
		it, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue // linked but never stored: nothing to carry
		}
		if err == nil {
			var werr error
			if err = it.Value(func(val []byte) error { werr = write(h, key, val); return nil }); err == nil {
				err = werr
			} else {
				*skipped = append(*skipped, asDamage(key, err).(*DamageError))
				err = nil
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// spliceType writes {"type":"<typ>",<the fields of obj>}.
func spliceType(b []byte, typ string, obj []byte) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, '"')
	return appendRest(b, obj)
}

// appendRest appends the fields of a JSON object (after its opening
// brace), with a separating comma if it has any.
func appendRest(b, obj []byte) []byte {
	obj = bytes.TrimSpace(obj)
	if len(obj) < 2 || obj[0] != '{' {
		return append(b, '}')
	}
	rest := bytes.TrimSpace(obj[1:])
	if len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, rest...)
}

// Import reads a JSONL export (see Export) into the store. name is used
// in errors, which are positioned: "data.jsonl:12: span 3 of execution
// …". The whole input is checked before anything is written, so a bad
// line writes nothing. Tasks and executions in the input must not exist
// in the store yet; spans and rewards must carry their seq. If r is not
// an io.ReadSeeker it is read into memory.
func (s *Store) Import(ctx context.Context, r io.Reader, name string) (Counts, error) {
	if s.ro {
		return Counts{}, fmt.Errorf("import %s: store %s: %w", name, s.dir, ErrReadOnly)
	}
	if err := s.settle(); err != nil { // its write batch goes to Badger directly
		return Counts{}, fmt.Errorf("import %s: %w", name, err)
	}
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		data, err := io.ReadAll(r)
		if err != nil {
			return Counts{}, fmt.Errorf("import %s: %w", name, err)
		}
		rs = bytes.NewReader(data)
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return Counts{}, fmt.Errorf("import %s: %w", name, err)
	}
	im := &importer{s: s, name: name}
	if err := im.check(ctx, rs); err != nil {
		return Counts{}, err
	}
	if len(im.spanRefs) > 0 {
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return Counts{}, fmt.Errorf("import %s: %w", name, err)
		}
		if err := im.checkSpanRefs(ctx, rs); err != nil {
			return Counts{}, err
		}
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return Counts{}, fmt.Errorf("import %s: %w", name, err)
	}
	// The batch is not one transaction: m/derive marks the derived keys
	// incomplete until they are rebuilt for every task the input touches,
	// so that a crash part-way leaves them to the next writer's Open.
	if err := s.markDeriving(); err != nil {
		return Counts{}, fmt.Errorf("import %s: %w", name, err)
	}
	// Its tasks are created as CreateTask creates one: with bmu held
	// alone, counted, so that a Begin of one that looked in Badger
	// before looks again (appendBegin).
	s.bmu.Lock()
	n, err := im.write(ctx, rs)
	s.created.Add(1)
	s.bmu.Unlock()
	s.seqs.reset()
	ids := make([]string, 0, len(im.tasks)+len(im.taskRefs))
	for id := range im.tasks {
		ids = append(ids, id)
	}
	for id := range im.taskRefs {
		if im.tasks[id] == 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	derr := s.rederive(context.WithoutCancel(ctx), ids)
	if derr == nil {
		derr = s.setLayout()
	}
	if derr != nil {
		derr = fmt.Errorf("import %s: build indexes: %w", name, derr)
	}
	return n, errors.Join(err, derr)
}

type importer struct {
	s    *Store
	name string

	tasks    map[string]int    // tasks defined in the input → their line
	execs    map[string]int    // task\0exec defined in the input → its line
	taskRefs map[string]int    // task → first line referring to it
	execRefs map[string]int    // task\0exec → first line referring to it
	spanRefs map[string][]sref // task → rewards aimed at its spans
}

type sref struct {
	line   int
	spanID string
	found  bool
}

func (im *importer) errAt(line int, err error) error {
	return fmt.Errorf("%s:%d: %w", im.name, line, err)
}

// Line shapes. Embedding flattens the record's fields beside "type".
type (
	lineHead struct {
		Type string `json:"type"`
	}
	taskLine struct {
		lineHead
		Task
	}
	executionLine struct {
		lineHead
		Execution
	}
	spanLine struct {
		lineHead
		Span
	}
	rewardLine struct {
		lineHead
		Reward
	}
	checkpointLine struct {
		lineHead
		Checkpoint
	}
	recordingLine struct {
		lineHead
		Recording
		Tasks []string `json:"tasks,omitempty"`
	}
)

// record is one decoded, checked and encoded line.
type record struct {
	typ  string
	kvs  []kv
	task *Task // for the indexes
	refs []string
}

// lines calls fn for each non-blank line with its number.
func (im *importer) lines(ctx context.Context, r io.Reader, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return im.errAt(n+1, fmt.Errorf("line longer than %d MiB", maxLine>>20))
		}
		return fmt.Errorf("import %s: %w", im.name, err)
	}
	return nil
}

// check decodes and checks every line, and the references between them,
// without writing.
func (im *importer) check(ctx context.Context, r io.Reader) error {
	im.tasks, im.execs = map[string]int{}, map[string]int{}
	im.taskRefs, im.execRefs = map[string]int{}, map[string]int{}
	im.spanRefs = map[string][]sref{}
	first := true
	err := im.lines(ctx, r, func(n int, line []byte) error {
		rec, err := im.decode(line, first)
		first = false
		if err != nil {
			return im.errAt(n, err)
		}
		switch rec.typ {
		case "task":
			id := rec.task.ID
			if im.tasks[id] > 0 {
				return im.errAt(n, fmt.Errorf("task %q appears twice", id))
			}
			im.tasks[id] = n
		case "execution":
			id := rec.refs[0] + "\x00" + rec.refs[1]
			if im.execs[id] > 0 {
				return im.errAt(n, fmt.Errorf("execution %q of task %q appears twice", rec.refs[1], rec.refs[0]))
			}
			im.execs[id] = n
		}
		// refs: task[, execution[, span id]]
		if len(rec.refs) > 0 {
			if _, ok := im.taskRefs[rec.refs[0]]; !ok {
				im.taskRefs[rec.refs[0]] = n
			}
		}
		if len(rec.refs) > 1 && rec.refs[1] != "" && rec.typ != "execution" {
			id := rec.refs[0] + "\x00" + rec.refs[1]
			if _, ok := im.execRefs[id]; !ok {
				im.execRefs[id] = n
			}
		}
		if len(rec.refs) > 2 && rec.refs[2] != "" {
			im.spanRefs[rec.refs[0]] = append(im.spanRefs[rec.refs[0]], sref{line: n, spanID: rec.refs[2]})
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Check against the store; report the problem on the earliest line.
	var (
		badLine = 0
		badErr  error
	)
	report := func(line int, err error) {
		if badErr == nil || line < badLine {
			badLine, badErr = line, err
		}
	}
	err = im.s.view(ctx, func(txn *badger.Txn) error {
		for id, line := range im.tasks {
			if ok, err := exists(txn, taskKey(id)); err != nil {
				return err
			} else if ok {
				report(line, fmt.Errorf("task %q: %w in the store", id, ErrExists))
			}
		}
		for id, line := range im.taskRefs {
			if im.tasks[id] > 0 {
				continue
			}
			if ok, err := exists(txn, taskKey(id)); err != nil {
				return err
			} else if !ok {
				report(line, fmt.Errorf("task %q is neither in the input nor in the store", id))
			}
		}
		for id, line := range im.execs {
			task, exec, _ := strings.Cut(id, "\x00")
			if ok, err := exists(txn, execKey(task, exec)); err != nil {
				return err
			} else if ok {
				report(line, fmt.Errorf("execution %q of task %q: %w in the store", exec, task, ErrExists))
			}
		}
		for id, line := range im.execRefs {
			if im.execs[id] > 0 {
				continue
			}
			task, exec, _ := strings.Cut(id, "\x00")
			if ok, err := exists(txn, execKey(task, exec)); err != nil {
				return err
			} else if !ok {
				report(line, fmt.Errorf("execution %q of task %q is neither in the input nor in the store", exec, task))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("import %s: %w", im.name, err)
	}
	if badErr != nil {
		return im.errAt(badLine, badErr)
	}
	return nil
}

// checkSpanRefs makes sure every reward aimed at a span names a span in
// the input or the store. It is a separate pass because an export puts a
// task's rewards before its spans.
func (im *importer) checkSpanRefs(ctx context.Context, r io.Reader) error {
	err := im.lines(ctx, r, func(n int, line []byte) error {
		if !bytes.Contains(line, []byte(`"span"`)) {
			return nil
		}
		var sl spanLine
		if json.Unmarshal(line, &sl) != nil || sl.Type != "span" {
			return nil
		}
		refs := im.spanRefs[sl.Task]
		for i := range refs {
			if refs[i].spanID == sl.SpanID {
				refs[i].found = true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var bad []sref
	err = im.s.view(ctx, func(txn *badger.Txn) error {
		for _, task := range sortedKeys(im.spanRefs) {
			for _, ref := range im.spanRefs[task] {
				if ref.found {
					continue
				}
				if err := findSpan(ctx, txn, task, ref.spanID); errors.Is(err, ErrNotFound) {
					bad = append(bad, ref)
				} else if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("import %s: %w", im.name, err)
	}
	if len(bad) > 0 {
		slices.SortFunc(bad, func(a, b sref) int { return a.line - b.line })
		return im.errAt(bad[0].line, fmt.Errorf("reward names span %s, which is neither in the input nor in the store", bad[0].spanID))
	}
	return nil
}

// write decodes the checked input again and writes it in a batch.
func (im *importer) write(ctx context.Context, r io.Reader) (Counts, error) {
	var n Counts
	im.s.wmu.RLock() // an import is paused for no snapshot: readers wait for it
	defer im.s.wmu.RUnlock()
	im.s.jr.writeStarts() // it may create tasks: Begin's floor no longer holds
	defer im.s.jr.writeEnds()
	wb := im.s.db.NewWriteBatch()
	defer wb.Cancel()
	first := true
	err := im.lines(ctx, r, func(line int, b []byte) error {
		rec, err := im.decode(b, first)
		first = false
		if err != nil {
			return im.errAt(line, err) // cannot happen: check passed
		}
		if rec.typ == "recording" {
			im.s.noteRecording(string(rec.kvs[0].k[len(pRec):]))
			// A link of a task in the store may name more (layout 7):
			// they stay named.
			err := im.s.db.View(func(txn *badger.Txn) error {
				for i, e := range rec.kvs[1:] {
					more, err := keptLinks(txn, e.k, nil)
					if err != nil {
						return err
					}
					rec.kvs[1+i].v = linkValue(more)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		for _, e := range rec.kvs {
			if err := wb.Set(e.k, e.v); err != nil {
				return err
			}
		}
		if rec.task != nil {
			if err := setTaskIndexes(wb, rec.task); err != nil {
				return err
			}
		}
		switch rec.typ {
		case "task":
			n.Tasks++
		case "execution":
			n.Executions++
		case "span":
			n.Spans++
		case "reward":
			n.Rewards++
		case "recording":
			n.Recordings++
		case "checkpoint":
			n.Checkpoints++
		}
		return nil
	})
	if err == nil {
		err = wb.Flush()
	}
	if err != nil {
		return n, fmt.Errorf("import %s: %w", im.name, err)
	}
	return n, nil
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// decode turns one line into checked, encoded key-values.
func (im *importer) decode(line []byte, first bool) (*record, error) {
	var head lineHead
	if err := json.Unmarshal(line, &head); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	s := im.s
	rec := &record{typ: head.Type}
	bad := func(err error) (*record, error) {
		return nil, fmt.Errorf("%s: %w", head.Type, err)
	}
	switch head.Type {
	case "":
		return nil, errors.New(`record has no "type"`)
	case "header":
		var h exportHeader
		if err := strictUnmarshal(line, &h); err != nil {
			return bad(err)
		}
		if !first {
			return nil, errors.New("header must be the first line")
		}
		if h.Format != exportFormat {
			return nil, fmt.Errorf("format %q is not %q", h.Format, exportFormat)
		}
		if h.Version != exportVersion {
			return nil, fmt.Errorf("export version %d is not supported (this sextant reads version %d)", h.Version, exportVersion)
		}
	case "task":
		var l taskLine
		if err := strictUnmarshal(line, &l); err != nil {
			return bad(err)
		}
		t := &l.Task
		t.Created = t.Created.UTC()
		t.Tags = normTags(t.Tags)
		if t.Created.IsZero() {
			return nil, fmt.Errorf("task %q: created time is missing", t.ID)
		}
		if err := checkTask(t); err != nil {
			return nil, err
		}
		kvs, err := s.encodeTask(t, nil)
		if err != nil {
			return nil, fmt.Errorf("task %q: %w", t.ID, err)
		}
		rec.kvs = kvs
		rec.task = t
	case "execution":
		var l executionLine
		if err := strictUnmarshal(line, &l); err != nil {
			return bad(err)
		}
		e := &l.Execution
		e.Started, e.Ended = e.Started.UTC(), e.Ended.UTC()
		if err := checkExecution(e); err != nil {
			return nil, err
		}
		val, err := s.encode(e)
		if err != nil {
			return nil, fmt.Errorf("execution %q: %w", e.ID, err)
		}
		rec.kvs = []kv{{execKey(e.Task, e.ID), val}}
		rec.refs = []string{e.Task, e.ID}
	case "span":
		var l spanLine
		if err := strictUnmarshal(line, &l); err != nil {
			return bad(err)
		}
		sp := &l.Span
		if err := validID("task id", sp.Task); err != nil {
			return nil, err
		}
		if err := validID("execution id", sp.Execution); err != nil {
			return nil, err
		}
		if sp.Seq == 0 {
			return nil, fmt.Errorf("span of execution %q has no seq", sp.Execution)
		}
		if err := checkSpan(sp); err != nil {
			return nil, err
		}
		js, err := appendSpanBody([]byte{'{'}, sp)
		if err != nil {
			return nil, fmt.Errorf("span %d of execution %q: %w", sp.Seq, sp.Execution, err)
		}
		val, err := s.seal(append(js, '}'))
		if err != nil {
			return nil, err
		}
		rec.kvs = []kv{{spanKeyInto(nil, sp.Task, sp.Execution, sp.Seq), val}}
		rec.refs = []string{sp.Task, sp.Execution}
	case "reward":
		var l rewardLine
		if err := strictUnmarshal(line, &l); err != nil {
			return bad(err)
		}
		rw := &l.Reward
		rw.Created = rw.Created.UTC()
		rw.Tags = normTags(rw.Tags)
		if err := checkReward(rw); err != nil {
			return nil, err
		}
		if rw.Seq == 0 {
			return nil, fmt.Errorf("reward of task %q has no seq", rw.Task)
		}
		val, err := s.encode(rw)
		if err != nil {
			return nil, err
		}
		rec.kvs = []kv{{rewardKey(rw.Task, rw.Seq), val}}
		for _, tag := range rw.Tags {
			rec.kvs = append(rec.kvs, kv{rewardTagKey(tag, rw.Task), nil})
		}
		rec.refs = []string{rw.Task, rw.Execution, rw.SpanID}
	case "checkpoint":
		var l checkpointLine
		if err := strictUnmarshal(line, &l); err != nil {
			return bad(err)
		}
		c := &l.Checkpoint
		c.Updated = c.Updated.UTC()
		if err := validID("task id", c.Task); err != nil {
			return nil, err
		}
		if err := validID("execution id", c.Execution); err != nil {
			return nil, err
		}
		state, err := s.red.redactOpaque(c.State)
		if err != nil {
			return nil, err
		}
		c.State = state
		val, err := encodeRedacted(c)
		if err != nil {
			return nil, err
		}
		rec.kvs = []kv{{checkpointKey(c.Task, c.Execution), val}}
		rec.refs = []string{c.Task, c.Execution}
	case "recording":
		var l recordingLine
		if err := strictUnmarshal(line, &l); err != nil {
			return bad(err)
		}
		rc := &l.Recording
		rc.Created = rc.Created.UTC()
		if err := checkRecording(rc); err != nil {
			return nil, err
		}
		val, err := s.encode(rc)
		if err != nil {
			return nil, err
		}
		rec.kvs = []kv{{recordingKey(rc.Hash), val}}
		for _, t := range l.Tasks {
			if err := validID("task id", t); err != nil {
				return nil, fmt.Errorf("recording %s: %w", rc.Hash, err)
			}
			rec.kvs = append(rec.kvs, kv{linkKey(t, rc.Hash), nil})
		}
	default:
		return nil, fmt.Errorf("unknown record type %q (want header, task, execution, span, reward, checkpoint or recording)", head.Type)
	}
	return rec, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
