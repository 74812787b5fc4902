// Package store is sextant's durable record: tasks, their executions,
// spans, rewards and checkpoints, provider and human recordings, strategy
// records, and keyed collections for later features, in one Badger
// directory (default .sextant/).
//
// It must not know about pipelines, routines or plugins beyond the names
// it is given; it stores what the run and replay engines hand it, and
// never stores a secret (see Redactor).
//
// # Key layout
//
// Keys are prefix-ordered so that one task's data is one range scan
// (Tree, Export). <task>, <exec> and <hash> are ids of [A-Za-z0-9._:+-]
// (no '/'), so t/<task>/ never prefixes another task's keys. <seq:8> is
// a big-endian uint64, so keys sort in sequence order and never by clock;
// <inv:8> is MaxUint64 minus the created time in Unix nanoseconds, so an
// ascending scan lists newest first.
//
//	key                                   value
//	m/meta                                {layout}: the key layout version (9)
//	m/lease                               {pid, host, started}: the lease of the last writer (lease.go)
//	t/<task>/a                            Task (its input and truth too, unless they are large)
//	t/<task>/b/input                      a large task's input (JSON), written once (body.go)
//	t/<task>/b/truth                      a large task's truth (JSON)
//	t/<task>/e/<exec>                     Execution; with its last checkpoint, the task's links and recordings, if one apply created and wrote them (layout 9)
//	t/<task>/h/<hash>                     (empty) the task made or used recording <hash>; or ["<hash>",…]: and those too (layout 7)
//	t/<task>/k/<exec>                     Checkpoint: the execution's latest run state, unless its record holds it
//	t/<task>/r/<seq:8>                    Reward
//	t/<task>/s/<exec>/<seq:8>             Span, or a batch of spans ending at seq (see Values)
//	x/time/<inv:8><task>                  (empty) index: all tasks, newest first
//	x/pipe/<pipeline>\x00<inv:8><task>    (empty) index: tasks of a pipeline
//	x/tag/<tag>\x00<inv:8><task>          (empty) index: tasks with a tag
//	x/rtag/<tag>\x00<task>                (empty) index: tasks with a reward with a tag
//	x/status/<status>\x00<inv:8><task>     (empty) index: tasks in a status but completed (derived)
//	x/pstat/<pipeline>\x00<status>\x00<inv:8><task>  (empty) index: a pipeline's tasks in a status but completed (derived)
//	x/sum/<inv:8><task>/…                 a task's summary for lists and metrics (derived)
//	x/spend/<task>/…                      usage of spans staged before their task (derived)
//	m/derive                              (present while derived keys are rebuilt)
//	r/<hash>                              Recording, by canonical request hash; or "<task>/<exec>": that execution's record holds it (layout 9)
//	g/<name>/<version>                    StrategyRecord
//	c/<collection>/<key>                  a Collection value (replay results, comparisons, …)
//
// Sub-keys under t/<task>/ use letters that sort in the order Tree reads
// them: the task, its body, executions, links, checkpoints, rewards,
// spans.
//
// Derived keys are written in the same transaction as the records they
// follow, so lists by status and metrics read them instead of whole
// tasks; Export leaves them out and Import (and so Salvage) builds them
// from what it writes. A store of an older layout (1 had none) is read
// from its records, and the first writer to open it builds them again
// (see summary.go).
//
// # Values
//
// Every value is one schema-version byte (1) followed by JSON. JSON keeps
// records readable by any Badger tool and lets fields be added freely;
// the version byte is for changes old code must not misread. A value of
// another version is a *SchemaError (errors.Is ErrSchemaVersion) naming
// the key, never a half-decoded record. Spans, the hot path, are encoded
// without reflection (appendSpanBody) into the same JSON that
// encoding/json would write. A span entry holds one span (task,
// execution and seq live in the key) or, since layout 5, a batch: a JSON
// array of consecutive spans of the execution, each with its seq, the
// key's seq being the last. A burst of new spans is written as batches
// of up to 64; a span written again replaces its copy where it is. Since
// layout 6 a span leaves out its trace and span ids when they are the
// ones derived from its key (TraceIDFor, SpanIDFor): readers derive them
// again. Since layout 7 a recording link may name more recordings: the
// links a task gains in one apply transaction of the journal are one
// entry, keyed by the first, whose value lists the others (a link of one
// recording stays empty); readers list a task's recordings sorted, once
// each, as before. Since layout 8 a task's summary entry may hold its
// executions and their calls, and the derived keys are fewer: the status
// indexes have no entry for a completed task, and there is no x/sat/
// (summary.go). Since layout 9 an execution's record written by the
// apply transaction that created it (Begin) holds, as its last fields
// "checkpoint", "links" and "recordings", the execution's last
// checkpoint, the recordings its task linked in that transaction and
// those it made there: the first two then have no t/k and t/h entries,
// and the recordings' r/<hash> entries only name the record, small
// enough for Badger's tree. Later checkpoints, links and recordings have
// entries of their own, which readers prefer or add, and a rewrite of
// the record carries what it holds over (execfold.go).
//
// Every value passes through the store's Redactor after encoding: the
// secret never reaches Badger's write-ahead log, tables or value log.
//
// # Durability
//
// A commit returns once Badger has the data in its memory-mapped
// write-ahead log, which survives the process being killed (kill -9).
// Checkpoint additionally waits for an fsync (db.Sync), shared between
// concurrent checkpoints, so a step's checkpoint also survives a power
// loss; WithSyncCheckpoints(false) trades that for speed. Span bursts are
// written in as few transactions as Badger allows.
//
// # Locking: one writer, many readers
//
// A writer holds .sextant/sextant.lock exclusively for as long as it has
// the store open, with its pid and command line inside; a second writer
// gets "store .sextant is in use by pid 1234 (sextant run
// pipeline.toml); wait for it to finish, or stop it, and run this
// command again" (a *LockedError, errors.Is ErrLocked).
//
// A read-only Open never opens the store directory with Badger (whose
// read-only mode cannot share a directory with a writer, and refuses a
// write-ahead log a writer is appending to). It reads a snapshot: a
// private directory under .sextant/snapshots/ with copies of the logs
// (up to their last complete transaction), the MANIFEST and the tables,
// and hard links to the value logs. If a writer has the store open, the
// writer makes the snapshot, between two of its commits, when the reader
// asks on .sextant/sextant.sock; otherwise the reader makes it while
// holding .sextant/sextant.gate, which a writer that starts meanwhile
// waits for (it does not fail). A reader thus sees one committed state,
// never blocks a writer for longer than a copy, and never makes one
// fail. While snapshots are in use the writer defers value-log garbage
// collection, the only thing that deletes value logs. See RATIONALE.md.
package store
