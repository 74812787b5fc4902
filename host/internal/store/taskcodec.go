package store

import (
	"encoding/json"
	"slices"
	"strconv"
)

// marshalTask is json.Marshal(t) (taskValue without the version byte).
func marshalTask(t *Task) ([]byte, error) {
	if !fastTask(t) {
		return json.Marshal(t)
	}
	return appendTask(make([]byte, 0, taskSize(t)), t), nil
}

// fastTask reports whether appendTask writes t: a checked task
// (checkTask: its body valid JSON) as a run writes one, at Begin and at
// its finish, its times UTC, its body compact, no waits, incident or
// cancellation. Anything else goes the encoding/json way. The bytes are
// encoding/json's either way (TestTaskCodec).
func fastTask(t *Task) bool {
	return len(t.Waits) == 0 && t.Incident == nil && t.Cancelled == nil && plainUTC(t.Created) &&
		(t.Owner == nil || plainUTC(t.Owner.Started)) && plainCompact(t.Input) && plainCompact(t.Truth)
}

// taskSize is room for appendTask's bytes, as a rule.
func taskSize(t *Task) int {
	n := 192 + len(t.ID) + len(t.Pipeline) + len(t.Input) + len(t.Truth) + len(t.Routine) + len(t.Start) +
		len(t.Strategy.Name) + len(t.Strategy.Version) + len(t.Strategy.Hash)
	for _, tag := range t.Tags {
		n += len(tag) + 3
	}
	for k, v := range t.Rules {
		n += len(k) + len(v) + 6
	}
	return n
}

// taskValue is s.encode(t), the version byte and the redacted JSON in
// one array, and whether redaction changed anything.
func (s *Store) taskValue(t *Task) (val []byte, redacted bool, err error) {
	return s.appendTaskValue(make([]byte, 0, 1+taskSize(t)), t)
}

// appendTaskValue is taskValue appending to b: it returns b with the
// value after b's bytes.
func (s *Store) appendTaskValue(b []byte, t *Task) (_ []byte, redacted bool, err error) {
	start := len(b)
	if fastTask(t) {
		b = appendTask(append(b, schemaVersion), t)
	} else {
		js, err := json.Marshal(t)
		if err != nil {
			return nil, false, err
		}
		b = append(append(b, schemaVersion), js...)
	}
	js := b[start+1:]
	red, err := s.red.redactJSON(js)
	if err != nil {
		return nil, false, err
	}
	if len(red) != len(js) || len(js) > 0 && &red[0] != &js[0] { // redacted: a new value
		return append(b[:start+1], red...), true, nil
	}
	return b, false, nil
}

// appendTask appends t as encoding/json writes it, for a task
// marshalTask takes.
func appendTask(b []byte, t *Task) []byte {
	b = append(b, `{"id":`...)
	b = AppendJSONString(b, t.ID)
	b = append(b, `,"pipeline":`...)
	b = AppendJSONString(b, t.Pipeline)
	if len(t.Input) > 0 {
		b = append(append(b, `,"input":`...), t.Input...)
	}
	if len(t.Truth) > 0 {
		b = append(append(b, `,"truth":`...), t.Truth...)
	}
	if len(t.Tags) > 0 {
		b = append(b, `,"tags":[`...)
		for i, tag := range t.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, tag)
		}
		b = append(b, ']')
	}
	b = append(b, `,"status":`...)
	b = AppendJSONString(b, string(t.Status))
	b = append(b, `,"created":`...)
	b = appendTime(b, t.Created)
	if t.Strategy != (StrategyRef{}) {
		b = appendStrategy(append(b, `,"strategy":`...), t.Strategy)
	}
	if t.Routine != "" {
		b = append(b, `,"routine_hash":`...)
		b = AppendJSONString(b, t.Routine)
	}
	if len(t.Rules) > 0 {
		b = append(b, `,"rules_hashes":{`...)
		keys := make([]string, 0, len(t.Rules))
		for k := range t.Rules {
			keys = append(keys, k)
		}
		slices.Sort(keys) // encoding/json's order
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendJSONString(b, k), ':')
			b = AppendJSONString(b, t.Rules[k])
		}
		b = append(b, '}')
	}
	if t.Start != "" {
		b = append(b, `,"start":`...)
		b = AppendJSONString(b, t.Start)
	}
	if o := t.Owner; o != nil {
		b = append(b, `,"owner":{"pid":`...)
		b = strconv.AppendInt(b, int64(o.PID), 10)
		b = append(b, `,"host":`...)
		b = AppendJSONString(b, o.Host)
		b = append(b, `,"started":`...)
		b = appendTime(b, o.Started)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendStrategy appends a strategy reference that is not zero as
// encoding/json writes it.
func appendStrategy(b []byte, r StrategyRef) []byte {
	b = append(b, '{')
	comma := false
	for _, f := range [...]struct{ name, v string }{{`"name":`, r.Name}, {`"version":`, r.Version}, {`"hash":`, r.Hash}} {
		if f.v == "" {
			continue
		}
		if comma {
			b = append(b, ',')
		}
		b = append(b, f.name...)
		b = AppendJSONString(b, f.v)
		comma = true
	}
	return append(b, '}')
}

// encodeTaskValue is s.encode(t) for a task (taskValue).
func (s *Store) encodeTaskValue(t *Task) ([]byte, error) {
	val, _, err := s.taskValue(t)
	return val, err
}
