package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// bigTask is a task whose body is larger than bodyInline: HTML
// characters and spaces that encoding/json rewrites, and a secret the
// redactor removes.
func bigTask(id string) *Task {
	body := strings.Repeat("the customer <writes> & waits ", bodyInline/20)
	return &Task{ID: id, Pipeline: "p<1>", Tags: []string{"big"}, Created: t0,
		Input: json.RawMessage(`{ "body": "` + body + `", "password": "hunter2hunter2" }`),
		Truth: json.RawMessage(`{"label": "billing"}`)}
}

// writeInline stores t as a sextant before body keys did: input and
// truth inside the task record, whatever their size.
func writeInline(t *testing.T, s *Store, task *Task) {
	t.Helper()
	task.Status = StatusRunning
	val, err := s.encode(task)
	must(t, err)
	must(t, s.update(context.Background(), func(txn *badger.Txn) error {
		if err := txn.Set(taskKey(task.ID), val); err != nil {
			return err
		}
		if err := setTaskIndexes(txn, task); err != nil {
			return err
		}
		return s.setTaskDerived(txn, txn, txn, task, nil)
	}))
}

// bodyVersions returns the Badger versions of a task's record and body
// keys ("" for those it lacks), and the size of its record.
func bodyVersions(t *testing.T, s *Store, id string) (versions [3]uint64, recordSize int) {
	t.Helper()
	must(t, s.db.View(func(txn *badger.Txn) error {
		for i, k := range [][]byte{taskKey(id), bodyKey(id, bodyInput), bodyKey(id, bodyTruth)} {
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			versions[i] = item.Version()
			if i == 0 {
				recordSize = int(item.ValueSize())
			}
		}
		return nil
	}))
	return versions, recordSize
}

func exportAll(t *testing.T, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	_, err := s.Export(context.Background(), &buf, ExportOptions{Checkpoints: true})
	must(t, err)
	return buf.Bytes()
}

// TestTaskBody: a large input and truth are stored under keys of their
// own, written once; every read (Task, lists, Tree, Head, Export) sees
// the task as an inline record would give it, byte for byte.
func TestTaskBody(t *testing.T) {
	ctx := context.Background()
	split, inline := openTest(t), openTest(t)
	must(t, split.CreateTask(ctx, bigTask("big")))
	writeInline(t, inline, bigTask("big"))
	for _, s := range []*Store{split, inline} {
		seed(t, s, "small", 1)
	}

	v, size := bodyVersions(t, split, "big")
	if v[1] == 0 || v[2] == 0 || size > 512 {
		t.Fatalf("body keys %v, record of %d bytes: the body is not apart", v, size)
	}
	if v, _ := bodyVersions(t, split, "small"); v[1] != 0 || v[2] != 0 {
		t.Fatalf("a small body has keys of its own: %v", v)
	}

	want, err := inline.Task(ctx, "big")
	must(t, err)
	if bytes.Contains(want.Input, []byte("hunter2")) || !bytes.Contains(want.Input, []byte(`\u003cwrites\u003e`)) {
		t.Fatalf("inline input not as stored: %.80s", want.Input)
	}
	reads := map[string]func(s *Store) (*Task, error){
		"Task": func(s *Store) (*Task, error) { return s.Task(ctx, "big") },
		"Tasks": func(s *Store) (*Task, error) {
			l, err := s.Tasks(ctx, Query{Tag: "big"})
			if err != nil || len(l) != 1 {
				return nil, errors.Join(err, errors.New("not one task"))
			}
			return &l[0], nil
		},
		"Tree": func(s *Store) (*Task, error) {
			tr, err := s.Tree(ctx, "big")
			if err != nil {
				return nil, err
			}
			return &tr.Task, nil
		},
		"Head": func(s *Store) (*Task, error) {
			tr, err := s.Head(ctx, "big")
			if err != nil {
				return nil, err
			}
			return &tr.Task, nil
		},
	}
	for name, read := range reads {
		got, err := read(split)
		must(t, err)
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if !bytes.Equal(gj, wj) {
			t.Errorf("%s: split task reads\n%.200s\nwant\n%.200s", name, gj, wj)
		}
	}
	exp := exportAll(t, inline)
	if got := exportAll(t, split); !bytes.Equal(got, exp) {
		t.Fatalf("export of the split store\n%.300s\nwant\n%.300s", got, exp)
	}

	// A status change rewrites the record only.
	must(t, split.SetTaskStatus(ctx, "big", StatusCompleted))
	v2, _ := bodyVersions(t, split, "big")
	if v2[0] == v[0] || v2[1] != v[1] || v2[2] != v[2] {
		t.Fatalf("versions %v after a status change, were %v: want the record only rewritten", v2, v)
	}

	// An update that changes the body writes it again; one that makes it
	// small puts it back inline and removes the keys.
	must(t, split.UpdateTask(ctx, "big", func(tk *Task) error { tk.Truth = json.RawMessage(`{"label":"refund"}`); return nil }))
	v3, _ := bodyVersions(t, split, "big")
	if v3[1] == v2[1] && v3[2] == v2[2] {
		t.Fatalf("a changed truth was not written: %v", v3)
	}
	got, err := split.Task(ctx, "big")
	must(t, err)
	if string(got.Truth) != `{"label":"refund"}` || !bytes.Equal(got.Input, want.Input) {
		t.Fatalf("after the truth changed: truth %s, input kept %v", got.Truth, bytes.Equal(got.Input, want.Input))
	}
	must(t, split.UpdateTask(ctx, "big", func(tk *Task) error { tk.Input = json.RawMessage(`{"body":"short"}`); return nil }))
	if v, _ := bodyVersions(t, split, "big"); v[1] != 0 || v[2] != 0 {
		t.Fatalf("body keys %v left after the body became small", v)
	}
	got, err = split.Task(ctx, "big")
	must(t, err)
	if string(got.Input) != `{"body":"short"}` || string(got.Truth) != `{"label":"refund"}` {
		t.Fatalf("small body reads %s %s", got.Input, got.Truth)
	}
	checkDerived(t, split)
}

// TestTaskBodyInlineStore: a large task written inline (by a sextant
// before body keys) reads as before, and its first update moves the body
// to its keys without changing what any read or the export gives.
func TestTaskBodyInlineStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	writeInline(t, s, bigTask("old"))
	// As a sextant of layout 2 left it: a writer migrates it at Open.
	rawSet(t, s, keyMeta, append([]byte{schemaVersion}, `{"layout":2}`...))
	must(t, s.Close())
	s, err = Open(ctx, dir, testConfig())
	must(t, err)
	defer s.Close()
	var m storeMeta
	must(t, s.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyMeta), &m) }))
	if m.Layout != layoutVersion {
		t.Fatalf("layout %d after a writer opened a store of layout 2", m.Layout)
	}
	before := exportAll(t, s)
	want, err := s.Task(ctx, "old")
	must(t, err)
	if len(want.Input) < bodyInline {
		t.Fatalf("input of %d bytes", len(want.Input))
	}
	must(t, s.AddTags(ctx, "old", "moved"))
	v, size := bodyVersions(t, s, "old")
	if v[1] == 0 || size > 512 {
		t.Fatalf("the first update left the body inline: %v, record of %d bytes", v, size)
	}
	got, err := s.Task(ctx, "old")
	must(t, err)
	if !bytes.Equal(got.Input, want.Input) || !bytes.Equal(got.Truth, want.Truth) {
		t.Fatalf("body changed by the move:\n%.100s\nwant\n%.100s", got.Input, want.Input)
	}
	after := exportAll(t, s)
	if want := bytes.Replace(before, []byte(`"tags":["big"]`), []byte(`"tags":["big","moved"]`), 1); !bytes.Equal(after, want) {
		t.Fatalf("export after the move\n%.300s\nwant\n%.300s", after, want)
	}
}

// TestTaskBodyImport: export → import → export gives the same bytes, and
// the import stores a large body apart; a store salvaged and checked
// reads it whole.
func TestTaskBodyImport(t *testing.T) {
	ctx := context.Background()
	src := openTest(t)
	must(t, src.CreateTask(ctx, bigTask("big")))
	seed(t, src, "small", 2)
	exp := exportAll(t, src)

	dst := openTest(t)
	_, err := dst.Import(ctx, bytes.NewReader(exp), "export")
	must(t, err)
	if v, _ := bodyVersions(t, dst, "big"); v[1] == 0 {
		t.Fatal("the import kept a large body inline")
	}
	if got := exportAll(t, dst); !bytes.Equal(got, exp) {
		t.Fatalf("export after import\n%.300s\nwant\n%.300s", got, exp)
	}
	rep, err := dst.Check(ctx)
	must(t, err)
	if len(rep.Tasks) != 0 || len(rep.Keys) != 0 || rep.TasksRead != 2 {
		t.Fatalf("check: %+v", rep)
	}

	dir := dst.Dir()
	must(t, dst.Close())
	ro, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	defer ro.Close()
	salv, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	defer salv.Close()
	r, err := ro.Salvage(ctx, salv)
	must(t, err)
	if r.Copied.Tasks != 2 || len(r.Left) != 0 {
		t.Fatalf("salvage: %+v", r)
	}
	if got := exportAll(t, salv); !bytes.Equal(got, exp) {
		t.Fatalf("export of the salvaged store\n%.300s\nwant\n%.300s", got, exp)
	}
}

// TestTaskBodyDamaged: a body key that does not decode makes the task
// damaged for every read, as a damaged record does; lists skip it.
func TestTaskBodyDamaged(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	must(t, s.CreateTask(ctx, bigTask("big")))
	seed(t, s, "small", 0)
	for name, val := range map[string][]byte{
		"empty": {},
		"json":  append([]byte{schemaVersion}, `{"body":`...),
	} {
		t.Run(name, func(t *testing.T) {
			rawSet(t, s, string(bodyKey("big", bodyInput)), val)
			if _, err := s.Task(ctx, "big"); err == nil {
				t.Fatal("a damaged body reads")
			}
			if _, err := s.Tree(ctx, "big"); err == nil {
				t.Fatal("a damaged body reads in a tree")
			}
			list, err := s.Tasks(ctx, Query{})
			var sk *SkippedError
			if !errors.As(err, &sk) || len(list) != 1 || list[0].ID != "small" {
				t.Fatalf("list: %v %+v", err, list)
			}
			if name == "empty" {
				rep, err := s.Check(ctx)
				must(t, err)
				if len(rep.Tasks) != 1 || rep.Tasks[0].Task != "big" {
					t.Fatalf("check: %+v", rep.Tasks)
				}
			}
		})
	}
}
