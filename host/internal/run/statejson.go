package run

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// A run encodes its whole state after every step (checkpointRecord), and
// most of that state is the routine's variables: maps of strings, numbers
// and booleans. encoding/json spends most of its time there on reflection,
// map iteration and key sorting; appendState writes the same bytes
// directly. Fields that are rarely set (steps done but not handed over,
// events, actions) and values of other types go through encoding/json, and
// whatever the direct path cannot write exactly as encoding/json would (a
// NaN, a cycle) makes encode fall back to json.Marshal for the whole
// state, with its error. TestStateEncoding checks the bytes.

// errSlowPath sends encode to json.Marshal.
var errSlowPath = errors.New("state needs encoding/json")

// maxDepth bounds the nesting appendValue follows (encoding/json reports a
// cycle past 1000 levels; the fallback gives its error).
const maxDepth = 512

func (s *runState) encode() ([]byte, error) { return s.encodeInto(nil) }

// encodeInto is encode into buf's array (emptied first) when it is large
// enough.
func (s *runState) encodeInto(buf []byte) ([]byte, error) {
	if cap(buf) < 1024 {
		buf = make([]byte, 0, 1024)
	}
	b, err := appendState(buf[:0], s)
	if err != nil {
		c := *s // only the slow path lets a copy of the state escape
		return json.Marshal(&c)
	}
	return b, nil
}

func appendState(b []byte, s *runState) ([]byte, error) {
	var err error
	b = append(b, `{"pipeline":`...)
	b = appendString(b, s.Pipeline)
	b = append(b, `,"nav":`...)
	if b, err = appendNav(b, &s.Nav); err != nil {
		return nil, err
	}
	b = append(b, `,"steps":`...)
	b = strconv.AppendInt(b, int64(s.Steps), 10)
	if s.Complete {
		b = append(b, `,"complete":true`...)
	}
	b = append(b, `,"tokens":`...)
	b = strconv.AppendInt(b, int64(s.Tokens), 10)
	b = append(b, `,"cost_usd":`...)
	if b, err = appendFloat(b, s.CostUSD); err != nil {
		return nil, err
	}
	b = append(b, `,"span_seq":`...)
	b = strconv.AppendUint(b, s.SpanSeq, 10)
	if s.Violations != 0 {
		b = append(b, `,"violations":`...)
		b = strconv.AppendInt(b, int64(s.Violations), 10)
	}
	if s.Confirmations != 0 {
		b = append(b, `,"confirmations":`...)
		b = strconv.AppendInt(b, int64(s.Confirmations), 10)
	}
	if s.Approved {
		b = append(b, `,"approved":true`...)
	}
	if len(s.Done) > 0 {
		b = append(b, `,"done":`...)
		if b, err = appendMarshal(b, s.Done); err != nil {
			return nil, err
		}
	}
	if len(s.Waiting) > 0 {
		b = append(b, `,"waiting":`...)
		b = appendStringMap(b, s.Waiting)
	}
	if len(s.Events) > 0 {
		b = append(b, `,"events":`...)
		if b, err = appendMarshal(b, s.Events); err != nil {
			return nil, err
		}
	}
	if len(s.Released) > 0 {
		b = append(b, `,"released":`...)
		if b, err = appendMarshal(b, s.Released); err != nil {
			return nil, err
		}
	}
	if len(s.Answers) > 0 {
		b = append(b, `,"answers":`...)
		if b, err = appendMarshal(b, s.Answers); err != nil {
			return nil, err
		}
	}
	if len(s.Actions) > 0 {
		b = append(b, `,"actions":`...)
		if b, err = appendMarshal(b, s.Actions); err != nil {
			return nil, err
		}
	}
	if len(s.Trace) > 0 {
		b = append(b, `,"trace":`...)
		b = appendStrings(b, s.Trace)
	}
	if len(s.Cited) > 0 {
		b = append(b, `,"cited":`...)
		b = appendStrings(b, s.Cited)
	}
	b = append(b, `,"started":`...)
	if b, err = appendTime(b, s.Started); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendNav(b []byte, n *sdk.State) ([]byte, error) {
	var err error
	b = append(b, `{"routine":`...)
	b = appendString(b, n.Routine)
	if len(n.Tokens) > 0 {
		b = append(b, `,"tokens":[`...)
		for i := range n.Tokens {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendToken(b, &n.Tokens[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if n.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, n.Seq, 10)
	}
	if len(n.Data) > 0 {
		b = append(b, `,"data":`...)
		if b, err = appendMap(b, n.Data, 0); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"env":{`...)
	comma := false
	for _, f := range [...]struct {
		key string
		m   map[string]any
	}{{`"input":`, n.Env.Input}, {`"vars":`, n.Env.Vars}, {`"strategy":`, n.Env.Strategy}} {
		if len(f.m) == 0 {
			continue
		}
		if comma {
			b = append(b, ',')
		}
		comma = true
		b = append(b, f.key...)
		if b, err = appendMap(b, f.m, 0); err != nil {
			return nil, err
		}
	}
	if !n.Env.Now.IsZero() {
		if comma {
			b = append(b, ',')
		}
		b = append(b, `"now":`...)
		if b, err = appendTime(b, n.Env.Now); err != nil {
			return nil, err
		}
	}
	return append(b, "}}"...), nil
}

func appendToken(b []byte, t *sdk.Token) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, t.ID)
	b = append(b, `,"node":`...)
	b = appendString(b, t.Node)
	b = append(b, `,"status":`...)
	b = appendString(b, string(t.Status))
	if t.Scope != "" {
		b = append(b, `,"scope":`...)
		b = appendString(b, t.Scope)
	}
	if len(t.Triggers) > 0 {
		b = append(b, `,"triggers":`...)
		b = appendStrings(b, t.Triggers)
	}
	if t.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(t.Attempt), 10)
	}
	if t.DelayMS != 0 {
		b = append(b, `,"delay_ms":`...)
		b = strconv.AppendInt(b, t.DelayMS, 10)
	}
	if len(t.Attrs) > 0 {
		b = append(b, `,"attrs":`...)
		var err error
		if b, err = appendMap(b, t.Attrs, 0); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendValue writes v as encoding/json does: the common types directly,
// the rest through json.Marshal.
func appendValue(b []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return appendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendMap(b, x, depth+1)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		if depth >= maxDepth {
			return nil, errSlowPath
		}
		b = append(b, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendStrings(b, x), nil
	}
	return appendMarshal(b, v)
}

func appendMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	if depth >= maxDepth {
		return nil, errSlowPath
	}
	// Each entry is taken with its value as the map is walked, then
	// sorted by key: no key is looked up again.
	var small [32]mapEntry
	es := small[:0]
	for k, v := range m {
		es = append(es, mapEntry{k, v})
	}
	if len(es) <= len(small) {
		// Insertion sort: for the few dozen names of a run's vars it beats
		// the generic sort, whose comparison is an indirect call.
		for i := 1; i < len(es); i++ {
			for j := i; j > 0 && es[j].key < es[j-1].key; j-- {
				es[j], es[j-1] = es[j-1], es[j]
			}
		}
	} else {
		slices.SortFunc(es, func(x, y mapEntry) int { return strings.Compare(x.key, y.key) })
	}
	b = append(b, '{')
	var err error
	for i := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, es[i].key)
		b = append(b, ':')
		if b, err = appendValue(b, es[i].val, depth); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// mapEntry is a map's entry, as appendMap sorts them.
type mapEntry struct {
	key string
	val any
}

func appendStringMap(b []byte, m map[string]string) []byte {
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

func appendStrings(b []byte, s []string) []byte {
	b = append(b, '[')
	for i, e := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, e)
	}
	return append(b, ']')
}

// appendMarshal appends encoding/json's encoding of v; an error sends
// encode to the slow path, which reports it.
func appendMarshal(b []byte, v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, errSlowPath
	}
	return append(b, js...), nil
}

// appendFloat is encoding/json's float64 encoding.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, errSlowPath
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendTime is time.Time's MarshalJSON.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, errSlowPath
	}
	return append(b, '"'), nil
}

// appendString is encoding/json's string encoding.
func appendString(b []byte, s string) []byte { return store.AppendJSONString(b, s) }
