package store

import (
	"strings"
	"time"
	"unicode/utf8"
)

// encodeExecution is s.encode(e) without reflection, for an execution
// whose times are UTC (as putExecution and updatedExecution make them):
// a run's end rewrites its execution. The bytes are encoding/json's
// (TestExecutionCodec); another time goes the encoding/json way.
func (s *Store) encodeExecution(e *Execution) ([]byte, error) {
	if !plainUTC(e.Started) || !e.Ended.IsZero() && !plainUTC(e.Ended) {
		return s.encode(e)
	}
	n := 256 + len(e.Task) + len(e.ID) + len(e.Strategy.Name) + len(e.Strategy.Version) + len(e.Strategy.Hash) +
		len(e.Mode) + len(e.Status) + len(e.TraceID) + len(e.Error)
	for _, t := range e.Trace {
		n += len(t) + 3
	}
	return s.appendExecutionValue(make([]byte, 0, n), e) // room for the fields, their names and quotes
}

// appendExecutionValue is encodeExecution appending to b: it returns b
// with the value after b's bytes.
func (s *Store) appendExecutionValue(b []byte, e *Execution) ([]byte, error) {
	if !plainUTC(e.Started) || !e.Ended.IsZero() && !plainUTC(e.Ended) {
		val, err := s.encode(e)
		if err != nil {
			return nil, err
		}
		return append(b, val...), nil
	}
	start := len(b)
	b = append(b, schemaVersion)
	b = appendExecution(b, e)
	js := b[start+1:]
	red, err := s.red.redactJSON(js)
	if err != nil {
		return nil, err
	}
	if len(red) != len(js) || len(js) > 0 && &red[0] != &js[0] { // redacted: a new value
		b = append(b[:start+1], red...)
	}
	return b, nil
}

// plainUTC reports whether appendTime writes t as encoding/json does: a
// UTC time of a four-digit year.
func plainUTC(t time.Time) bool {
	y := t.Year()
	return t.Location() == time.UTC && y >= 0 && y <= 9999
}

// appendExecution appends e as encoding/json writes it, its times
// plainUTC.
func appendExecution(b []byte, e *Execution) []byte {
	b = append(b, `{"task":`...)
	b = AppendJSONString(b, e.Task)
	b = append(b, `,"id":`...)
	b = AppendJSONString(b, e.ID)
	if e.Strategy != (StrategyRef{}) {
		b = appendStrategy(append(b, `,"strategy":`...), e.Strategy)
	}
	if e.Mode != "" {
		b = append(b, `,"mode":`...)
		b = AppendJSONString(b, e.Mode)
	}
	b = append(b, `,"status":`...)
	b = AppendJSONString(b, string(e.Status))
	b = append(b, `,"trace_id":`...)
	b = AppendJSONString(b, e.TraceID)
	b = append(b, `,"started":`...)
	b = appendTime(b, e.Started)
	if !e.Ended.IsZero() {
		b = append(b, `,"ended":`...)
		b = appendTime(b, e.Ended)
	}
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = AppendJSONString(b, e.Error)
	}
	if len(e.Trace) > 0 {
		b = append(b, `,"trace":[`...)
		for i, t := range e.Trace {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, t)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// decodeExecution is decode(key, val, ex) for the execution task/id,
// without reflection when val is as appendExecution writes it (strings
// without escapes, UTC times), its task, id, status and mode sharing the
// strings the store has; anything else goes the encoding/json way, so
// the result (and the error for a damaged value) is decode's
// (TestExecutionCodec). A nil key is execKey(task, id), made only for
// an error or the encoding/json way.
func decodeExecution(key, val []byte, ex *Execution, task, id string) error {
	if len(val) > 0 && val[0] == schemaVersion {
		d := execDecoder{b: string(val[1:])} // one copy, which the fields share
		if d.execution(ex, task, id) && len(d.b) == 0 {
			return nil
		}
		*ex = Execution{}
	}
	if key == nil {
		key = execKey(task, id)
	}
	return decode(key, val, ex)
}

// decodeExecutionText is decodeExecution(nil, []byte(val), …) for a value
// held as a string (the journal's copy), whose fields share it.
func decodeExecutionText(val string, ex *Execution, task, id string) error {
	if len(val) > 0 && val[0] == schemaVersion {
		d := execDecoder{b: val[1:]}
		if d.execution(ex, task, id) && len(d.b) == 0 {
			return nil
		}
		*ex = Execution{}
	}
	return decode(execKey(task, id), []byte(val), ex)
}

// execDecoder reads what appendExecution writes; ok turns false at the
// first byte it does not expect.
type execDecoder struct {
	b  string // what is left to read: the strings read are parts of it
	ok bool
}

func (d *execDecoder) execution(ex *Execution, task, id string) bool {
	d.ok = true
	d.lit(`{"task":`)
	ex.Task = d.str(task)
	d.lit(`,"id":`)
	ex.ID = d.str(id)
	if d.opt(`,"strategy":{`) {
		comma := false
		for _, f := range [...]struct {
			first, next string // the field's name, and after another's comma
			v           *string
		}{{`"name":`, `,"name":`, &ex.Strategy.Name}, {`"version":`, `,"version":`, &ex.Strategy.Version}, {`"hash":`, `,"hash":`, &ex.Strategy.Hash}} {
			if comma && d.opt(f.next) || !comma && d.opt(f.first) {
				*f.v = d.str()
				comma = true
			}
		}
		d.lit("}")
		if ex.Strategy == (StrategyRef{}) { // written as {"name":""}: not appendExecution's
			d.ok = false
		}
	}
	if d.opt(`,"mode":`) {
		ex.Mode = d.str("live", "replay")
	}
	d.lit(`,"status":`)
	ex.Status = Status(d.str(string(StatusRunning), string(StatusWaiting), string(StatusCompleted), string(StatusFailed),
		string(StatusCancelled), string(StatusIncident), string(StatusInterrupted)))
	d.lit(`,"trace_id":`)
	ex.TraceID = d.str()
	d.lit(`,"started":`)
	ex.Started = d.time()
	if d.opt(`,"ended":`) {
		ex.Ended = d.time()
	}
	if d.opt(`,"error":`) {
		ex.Error = d.str()
	}
	if d.opt(`,"trace":[`) {
		ex.Trace = make([]string, 0, 1+strings.Count(d.b, `","`))
		for {
			ex.Trace = append(ex.Trace, d.str())
			if !d.ok || !d.opt(",") {
				break
			}
		}
		d.lit("]")
	}
	d.lit("}")
	return d.ok
}

// opt consumes s if the input goes on with it.
func (d *execDecoder) opt(s string) bool {
	if !d.ok || !strings.HasPrefix(d.b, s) {
		return false
	}
	d.b = d.b[len(s):]
	return true
}

// lit consumes s, which must come next.
func (d *execDecoder) lit(s string) {
	if !d.opt(s) {
		d.ok = false
	}
}

// str reads a string without escapes, control bytes or invalid UTF-8
// (which encoding/json reads otherwise than as its bytes): one of known
// if it is one, else the part of the input it is.
func (d *execDecoder) str(known ...string) string {
	if !d.ok || len(d.b) == 0 || d.b[0] != '"' {
		d.ok = false
		return ""
	}
	end := 1
	for end < len(d.b) && d.b[end] != '"' {
		if c := d.b[end]; c < 0x20 || c == '\\' {
			d.ok = false
			return ""
		}
		end++
	}
	if end == len(d.b) || !utf8.ValidString(d.b[1:end]) {
		d.ok = false
		return ""
	}
	raw := d.b[1:end]
	d.b = d.b[end+1:]
	for _, k := range known {
		if raw == k {
			return k
		}
	}
	return raw
}

// time reads a time as appendTime writes a plainUTC one.
func (d *execDecoder) time() time.Time {
	if !d.ok {
		return time.Time{}
	}
	// "YYYY-MM-DDThh:mm:ss, a fraction of up to nine digits, Z".
	b := d.b
	if len(b) < 22 || b[0] != '"' || b[5] != '-' || b[8] != '-' || b[11] != 'T' || b[14] != ':' || b[17] != ':' {
		d.ok = false
		return time.Time{}
	}
	num := func(s string) int {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				d.ok = false
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(b[1:5]), num(b[6:8]), num(b[9:11])
	hour, minute, sec := num(b[12:14]), num(b[15:17]), num(b[18:20])
	i, ns := 20, 0
	if b[i] == '.' {
		digits := 0
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9' && digits < 9; i++ {
			ns = ns*10 + int(b[i]-'0')
			digits++
		}
		for range 9 - digits {
			ns *= 10
		}
	}
	if !d.ok || i+1 >= len(b) || b[i] != 'Z' || b[i+1] != '"' {
		d.ok = false
		return time.Time{}
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, ns, time.UTC)
	// Only the text appendTime writes for t: no month 13 rolled over, no
	// trailing zero encoding/json would not write.
	var again [40]byte
	if string(appendTime(again[:0], t)) != b[:i+2] {
		d.ok = false
		return time.Time{}
	}
	d.b = b[i+2:]
	return t
}
