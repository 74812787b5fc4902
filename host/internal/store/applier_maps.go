package store

import "sync"

// applierMaps are an applier's maps, kept from one apply transaction to
// the next (applierMapsPool): emptied, a map keeps the room it grew to,
// which a transaction of many runs grows again otherwise, map by map.
type applierMaps struct {
	cps  map[seqID]*jrec
	exs  map[seqID]*jrec
	accs map[seqID]*spanAcc
	uses map[seqID]*usageAcc
	// unset holds the status index entries of the tasks Begin created in
	// this transaction, set at the end: a status change replaces them
	// rather than deleting keys set in the transaction, which Badger
	// would write as tombstones.
	unset map[string]*unsetKeys
	// links holds, by task, the recordings linked in this transaction:
	// one entry each task (setLinks), not one each link.
	links map[string][]string
	// begun holds, by task, the tasks Begin created in this transaction
	// as their records decode (jrec.begun): a status change of one
	// starts from it rather than decoding the task just set. Nothing else
	// in the transaction writes a task's record.
	begun map[string]*Task
	// fresh holds the tasks Begin created in this transaction, with the
	// execution it created: none has a link entry before it, so setting
	// their links reads none, and that execution's record may hold its
	// checkpoint and the task's links (foldParts).
	fresh map[string]string
	// sums holds the summary entries of the tasks Begin created in this
	// transaction, set at the end with their executions in them (setSum).
	sums map[string]*heldSum
	// recs holds, by hash, the last recording record of the transaction
	// made by a task, set at the end: whole, or as an index of the
	// execution record that holds it (setExec puts it in recIn).
	recs  map[string]*jrec
	recIn map[string]seqID
}

var applierMapsPool = sync.Pool{New: func() any {
	return &applierMaps{
		cps: map[seqID]*jrec{}, exs: map[seqID]*jrec{}, accs: map[seqID]*spanAcc{}, uses: map[seqID]*usageAcc{},
		unset: map[string]*unsetKeys{}, links: map[string][]string{}, begun: map[string]*Task{},
		fresh: map[string]string{}, sums: map[string]*heldSum{}, recs: map[string]*jrec{}, recIn: map[string]seqID{},
	}
}}

// takeMaps gives a its maps from applierMapsPool, empty.
func (a *applier) takeMaps() *applierMaps {
	m := applierMapsPool.Get().(*applierMaps)
	a.applierMaps = *m
	return m
}

// putMaps empties m, a's maps (takeMaps), and recycles them once a is
// done with them: nothing it keeps (jrec, accumulators) stays in them.
func (a *applier) putMaps(m *applierMaps) {
	clear(m.cps)
	clear(m.exs)
	clear(m.accs)
	clear(m.uses)
	clear(m.unset)
	clear(m.links)
	clear(m.begun)
	clear(m.fresh)
	clear(m.sums)
	clear(m.recs)
	clear(m.recIn)
	*a = applier{s: a.s, txn: a.txn}
	applierMapsPool.Put(m)
}
