package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// schemaVersion is the first byte of every stored value. The rest is
// JSON. JSON keeps values readable with any Badger tool and lets a field
// be added without a new version; the version byte is for changes that
// old code must not misread (a renamed or re-typed field). A reader meets
// a newer version with ErrSchemaVersion, never with a half-decoded value.
const schemaVersion byte = 1

// ErrSchemaVersion is returned when a stored value was written in a
// format this build does not know (by a newer sextant, or corrupted).
var ErrSchemaVersion = errors.New("unsupported schema version")

// SchemaError says which key held a value of an unknown schema version.
type SchemaError struct {
	Key     string
	Version byte
}

func (e *SchemaError) Error() string {
	if e.Version == 0 {
		return fmt.Sprintf("value at %s has no schema version (empty or corrupt)", e.Key)
	}
	return fmt.Sprintf("value at %s has schema version %d; this sextant reads version %d (upgrade sextant)", e.Key, e.Version, schemaVersion)
}

// Is makes errors.Is(err, ErrSchemaVersion) true.
// An empty or unversioned value (Version 0) is damage, which the store
// never writes; another version is a newer sextant's.
func (e *SchemaError) Is(target error) bool {
	return target == ErrSchemaVersion || e.Version == 0 && target == ErrDamaged
}

// encode marshals v as JSON behind the version byte, redacted.
func (s *Store) encode(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return s.seal(js)
}

// encodeRedacted marshals a value whose strings were redacted already
// (a checkpoint: its state is redacted raw, since inside the JSON it is
// base64) or cannot hold secrets.
func encodeRedacted(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte{schemaVersion}, js...), nil
}

// encodeCheckpoint is encodeRedacted(c) (the state already redacted)
// without reflection: a run writes one after every step. The bytes are
// exactly what encoding/json produces for a Checkpoint.
func encodeCheckpoint(c *Checkpoint) ([]byte, error) {
	return appendCheckpoint(make([]byte, 0, 96+len(c.Task)+len(c.Execution)+base64.StdEncoding.EncodedLen(len(c.State))), c)
}

// appendCheckpoint is encodeCheckpoint appending to b.
func appendCheckpoint(b []byte, c *Checkpoint) ([]byte, error) {
	if y := c.Updated.Year(); y < 0 || y > 9999 {
		cc := *c                   // only this path lets a copy escape
		return encodeRedacted(&cc) // encoding/json's error
	}
	b = append(b, schemaVersion)
	b = append(b, `{"task":`...)
	b = appendJSONString(b, c.Task)
	b = append(b, `,"execution":`...)
	b = appendJSONString(b, c.Execution)
	b = append(b, `,"step":`...)
	b = strconv.AppendUint(b, c.Step, 10)
	b = append(b, `,"state":`...)
	if c.State == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, c.State)
		b = append(b, '"')
	}
	b = append(b, `,"updated":"`...)
	b = c.Updated.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...), nil
}

// encodeRecording is s.encode(r) without reflection, for a recording
// that passed checkRecording (its request and response are valid JSON):
// a run writes one per provider call. Its raw request and response are
// compacted as encoding/json compacts a json.RawMessage; one that holds
// what encoding/json would also escape (<, >, &, U+2028, U+2029) goes
// the encoding/json way. The bytes are the same (TestEncodeRecording).
func (s *Store) encodeRecording(r *Recording) ([]byte, error) {
	return s.appendRecording(make([]byte, 0, recordingSize(r)), r)
}

// recordingSize is about the length of r's encoding.
func recordingSize(r *Recording) int {
	n := 192 + len(r.Hash) + len(r.Kind) + len(r.Provider) + len(r.Task) + len(r.Request) + len(r.Response)
	return n + n/32
}

// appendRecording is encodeRecording into b, which is empty: the version
// byte and the JSON in one array, sealed in place. The result is b's
// array unless it grew, was redacted or went the encoding/json way.
func (s *Store) appendRecording(b []byte, r *Recording) ([]byte, error) {
	if y := r.Created.Year(); y < 0 || y > 9999 || r.Request == nil || r.Response == nil ||
		strings.ContainsAny(r.Hash, "\b\f") || strings.ContainsAny(string(r.Kind), "\b\f") ||
		strings.ContainsAny(r.Provider, "\b\f") || strings.ContainsAny(r.Task, "\b\f") {
		// encoding/json's error, null, or its \b and \f (appendJSONString
		// writes them as \u0008 and \u000c)
		return s.encodeCopy(r)
	}
	b = append(b, schemaVersion)
	b = append(b, `{"hash":`...)
	b = appendJSONString(b, r.Hash)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(r.Kind))
	if r.Provider != "" {
		b = append(b, `,"provider":`...)
		b = appendJSONString(b, r.Provider)
	}
	for i, raw := range [2]json.RawMessage{r.Request, r.Response} {
		if i == 0 {
			b = append(b, `,"request":`...)
		} else {
			b = append(b, `,"response":`...)
		}
		if plainCompact(raw) { // valid (checkRecording), nothing to change
			b = append(b, raw...)
			continue
		}
		start := len(b)
		w := bytes.NewBuffer(b)
		if err := json.Compact(w, raw); err != nil || needsHTMLEscape(w.Bytes()[start:]) {
			return s.encodeCopy(r)
		}
		b = w.Bytes()
	}
	if r.Usage != (sdk.Usage{}) {
		b = append(b, `,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(r.Usage.InputTokens), 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(r.Usage.OutputTokens), 10)
		b = append(b, '}')
	}
	if r.Latency != 0 {
		b = append(b, `,"latency_ns":`...)
		b = strconv.AppendInt(b, int64(r.Latency), 10)
	}
	if r.Task != "" {
		b = append(b, `,"task":`...)
		b = appendJSONString(b, r.Task)
	}
	b = append(b, `,"created":"`...)
	b = r.Created.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `"}`...)
	return s.sealed(b)
}

// encodeCopy is s.encode of a copy of r: only this path lets one escape
// (PutChatRecording's recording lives on its stack).
func (s *Store) encodeCopy(r *Recording) ([]byte, error) {
	c := *r
	return s.encode(&c)
}

// sealed is seal for b that holds the version byte and the JSON already:
// it copies only what redaction changed.
func (s *Store) sealed(b []byte) ([]byte, error) {
	js := b[1:]
	red, err := s.red.redactJSON(js)
	if err != nil {
		return nil, err
	}
	if len(red) != len(js) || len(js) > 0 && &red[0] != &js[0] { // redacted: a new value
		return append(b[:1], red...), nil // red is an array of its own
	}
	return b, nil
}

// plainCompact reports whether valid JSON is compact (no whitespace
// outside strings) and holds nothing encoding/json escapes when it
// compacts a json.RawMessage: then compacting it changes nothing.
func plainCompact(b []byte) bool {
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			return false
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// needsHTMLEscape reports whether compact JSON holds a byte sequence
// encoding/json escapes when it compacts a json.RawMessage.
func needsHTMLEscape(b []byte) bool {
	for i, c := range b {
		switch {
		case c == '<' || c == '>' || c == '&':
			return true
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			return true
		}
	}
	return false
}

// seal puts the version byte in front of encoded JSON, redacted.
func (s *Store) seal(js []byte) ([]byte, error) {
	js, err := s.red.redactJSON(js)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+len(js))
	out[0] = schemaVersion
	copy(out[1:], js)
	return out, nil
}

// decode checks the version byte and unmarshals the rest into v.
func decode(key, val []byte, v any) error {
	js, err := unseal(key, val)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(js, v); err != nil {
		// The store wrote valid JSON: a value that does not decode is damaged.
		d := &DamageError{Err: fmt.Errorf("decode %s: %w", printableKey(key), err)}
		d.Task, _, _ = parseTaskSub(key)
		return d
	}
	return nil
}

func unseal(key, val []byte) ([]byte, error) {
	if len(val) == 0 || val[0] != schemaVersion {
		var ver byte
		if len(val) > 0 {
			ver = val[0]
		}
		return nil, &SchemaError{Key: printableKey(key), Version: ver}
	}
	return val[1:], nil
}

// printableKey renders a key for error messages: binary parts as hex.
func printableKey(key []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(key)+8)
	for _, c := range key {
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
			continue
		}
		out = append(out, '\\', 'x', hex[c>>4], hex[c&0xf])
	}
	return string(out)
}
