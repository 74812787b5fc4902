package store

import "sync"

// applierMaps are an applier's maps, kept from one apply transaction to
// the next (applierMapsPool): emptied, a map keeps the room it grew to,
// which a transaction of many runs grows again otherwise, map by map.
type applierMaps struct {
	cps, exs map[seqID]*jrec
	accs     map[seqID]*spanAcc
	uses     map[seqID]*usageAcc
	unset    map[string]*unsetKeys
	links    map[string][]string
	begun    map[string]*Task
	fresh    map[string]string
	sums     map[string]*heldSum
	recs     map[string]*jrec
	recIn    map[string]seqID
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
	a.cps, a.exs, a.accs, a.uses = m.cps, m.exs, m.accs, m.uses
	a.unset, a.links, a.begun, a.fresh = m.unset, m.links, m.begun, m.fresh
	a.sums, a.recs, a.recIn = m.sums, m.recs, m.recIn
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
