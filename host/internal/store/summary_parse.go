package store

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"
)

// The derived values have fixed shapes the store writes itself
// (summary.go), so lists and metrics, which read thousands of them a
// call, parse them directly rather than through encoding/json, which is
// most of such a call's time. Each parser accepts exactly the shape it
// expects and reports false for anything else; the caller then decodes
// with encoding/json, which gives the same result or the error to report.

// lit walks one JSON value of a known shape.
type lit struct {
	b []byte
	i int
}

func (l *lit) eat(s string) bool {
	if len(l.b)-l.i < len(s) || string(l.b[l.i:l.i+len(s)]) != s {
		return false
	}
	l.i += len(s)
	return true
}

func (l *lit) done() bool { return l.i == len(l.b) }

// str reads a string without escapes, as encoding/json reads it.
func (l *lit) str() (string, bool) {
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		return "", false
	}
	j := bytes.IndexByte(l.b[l.i+1:], '"')
	if j < 0 {
		return "", false
	}
	s := l.b[l.i+1 : l.i+1+j]
	for _, c := range s {
		if c == '\\' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(s) {
		return "", false
	}
	l.i += j + 2
	return string(s), true
}

// num returns the text of a number.
func (l *lit) num() ([]byte, bool) {
	j := l.i
	for j < len(l.b) {
		c := l.b[j]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			j++
			continue
		}
		break
	}
	if j == l.i {
		return nil, false
	}
	n := l.b[l.i:j]
	l.i = j
	return n, true
}

func (l *lit) int() (int64, bool) {
	n, ok := l.num()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	return v, err == nil
}

func (l *lit) uint() (uint64, bool) {
	n, ok := l.num()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	return v, err == nil
}

func (l *lit) float() (float64, bool) {
	n, ok := l.num()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(n), 64)
	return v, err == nil
}

// parseSumTask parses {"status":…,"pipeline":…[,"version":…]}.
func parseSumTask(js []byte) (v sumTaskVal, ok bool) {
	l := lit{b: js}
	if v, ok = parseSumTaskHead(&l); !ok {
		return v, false
	}
	return v, l.eat("}") && l.done()
}

// parseSumTaskHead parses a summary entry up to its executions or its
// end.
func parseSumTaskHead(l *lit) (v sumTaskVal, ok bool) {
	var st string
	if !l.eat(`{"status":`) {
		return v, false
	}
	if st, ok = l.str(); !ok || !l.eat(`,"pipeline":`) {
		return v, false
	}
	v.Status = Status(st)
	if v.Pipeline, ok = l.str(); !ok {
		return v, false
	}
	if l.eat(`,"version":`) {
		if v.Version, ok = l.str(); !ok {
			return v, false
		}
	}
	return v, true
}

// parseSumTaskExecs parses a summary entry: parseSumTask's form, or that
// with the executions it holds last ({…,"execs":[…]}, appendSumExec's),
// which it appends to dst.
func parseSumTaskExecs(js []byte, dst []ExecutionSummary) (v sumTaskVal, execs []ExecutionSummary, ok bool) {
	l := lit{b: js}
	if v, ok = parseSumTaskHead(&l); !ok {
		return v, dst, false
	}
	if !l.eat(execsField) {
		return v, dst, l.eat("}") && l.done()
	}
	n := len(dst)
	for k := 0; !l.eat("]"); k++ {
		if k > 0 && !l.eat(",") {
			return v, dst[:n], false
		}
		var es ExecutionSummary
		if !l.eat(`{"id":`) {
			return v, dst[:n], false
		}
		if es.ID, ok = l.str(); !ok {
			return v, dst[:n], false
		}
		if l.eat(`,"mode":`) {
			if es.Mode, ok = l.str(); !ok {
				return v, dst[:n], false
			}
		}
		if l.eat(`,"latency_us":`) {
			us, ok := l.int()
			if !ok {
				return v, dst[:n], false
			}
			es.Ended, es.Latency = true, time.Duration(us)*time.Microsecond
		}
		if l.eat(`,"calls":[`) {
			if es.Calls, ok = parseCalls(&l, nil); !ok {
				return v, dst[:n], false
			}
		}
		if !l.eat("}") {
			return v, dst[:n], false
		}
		dst = append(dst, es)
	}
	if !l.eat("}") || !l.done() {
		return v, dst[:n], false
	}
	return v, dst, true
}

// parseSumExec parses sumExecValue's {["mode":…][,]["latency_us":…]}.
func parseSumExec(js []byte) (mode string, latency time.Duration, ended, ok bool) {
	l := lit{b: js}
	if !l.eat("{") {
		return "", 0, false, false
	}
	if l.eat(`"mode":`) {
		if mode, ok = l.str(); !ok {
			return "", 0, false, false
		}
		if !l.eat(",") {
			return mode, 0, false, l.eat("}") && l.done()
		}
	}
	if l.eat(`"latency_us":`) {
		us, ok := l.int()
		if !ok {
			return "", 0, false, false
		}
		latency, ended = time.Duration(us)*time.Microsecond, true
	}
	return mode, latency, ended, l.eat("}") && l.done()
}

// parseSumReward parses {"n":…,"sum":…}.
func parseSumReward(js []byte) (n int, sum float64, ok bool) {
	l := lit{b: js}
	if !l.eat(`{"n":`) {
		return 0, 0, false
	}
	n64, ok := l.int()
	if !ok || !l.eat(`,"sum":`) {
		return 0, 0, false
	}
	if sum, ok = l.float(); !ok {
		return 0, 0, false
	}
	return int(n64), sum, l.eat("}") && l.done()
}

// parseSumUsage parses {"calls":[[seq,tokens,cost],…]}, appending the
// calls to dst.
func parseSumUsage(js []byte, dst []CallUsage) ([]CallUsage, bool) {
	l := lit{b: js}
	if !l.eat(`{"calls":[`) {
		return dst, false
	}
	n := len(dst)
	dst, ok := parseCalls(&l, dst)
	if !ok || !l.eat("}") || !l.done() {
		return dst[:n], false
	}
	return dst, true
}

// parseCalls parses calls [seq,tokens,cost],… up to the list's closing
// "]", appending them to dst.
func parseCalls(l *lit, dst []CallUsage) ([]CallUsage, bool) {
	n := len(dst)
	for i := 0; !l.eat("]"); i++ {
		if i > 0 && !l.eat(",") {
			return dst[:n], false
		}
		var c CallUsage
		var ok bool
		if !l.eat("[") {
			return dst[:n], false
		}
		if c.Seq, ok = l.uint(); !ok || !l.eat(",") {
			return dst[:n], false
		}
		if c.Tokens, ok = l.int(); !ok || !l.eat(",") {
			return dst[:n], false
		}
		if c.CostUSD, ok = l.float(); !ok || !l.eat("]") {
			return dst[:n], false
		}
		dst = append(dst, c)
	}
	return dst, true
}
