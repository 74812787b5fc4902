package store

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
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
func (e *SchemaError) Is(target error) bool { return target == ErrSchemaVersion }

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
	if y := c.Updated.Year(); y < 0 || y > 9999 {
		return encodeRedacted(c) // encoding/json's error
	}
	b := make([]byte, 0, 96+len(c.Task)+len(c.Execution)+base64.StdEncoding.EncodedLen(len(c.State)))
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
		return fmt.Errorf("decode %s: %w", printableKey(key), err)
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
