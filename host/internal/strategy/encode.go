package strategy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Encode returns the canonical TOML form of s: tables in the order of
// DESIGN §5, keys within a table in schema order (parameters and bounds
// sorted by name), constraint lists sorted, times in UTC, numbers in their
// shortest form, empty optional values left out. Parse(Encode(s)) gives
// back s (up to that normalization), and Hash is the sha256 of these bytes.
func (s *Strategy) Encode() []byte {
	var w encoder
	md := s.Metadata
	w.table(keyMetadata)
	w.kv(keyName, quote(md.Name))
	w.kv(keyVersion, quote(md.Version))
	w.optString(keyParentVersion, md.ParentVersion)
	if !md.CreatedAt.IsZero() {
		w.kv(keyCreatedAt, formatTime(md.CreatedAt))
	}
	w.optString(keyCreatedBy, md.CreatedBy)
	w.optString(keyDescription, md.Description)

	w.table(keyParameters)
	for _, k := range sortedKeys(s.Parameters) {
		w.kv(k, formatFloat(s.Parameters[k], true))
	}
	if len(s.ParameterBounds) > 0 {
		w.table(keyParameterBounds)
		for _, k := range sortedKeys(s.ParameterBounds) {
			b := s.ParameterBounds[k]
			w.kv(k, "["+formatFloat(b.Lo, true)+", "+formatFloat(b.Hi, true)+"]")
		}
	}

	w.table(keyConstraints)
	w.list(keyMustConfirm, s.Constraints.MustConfirmBefore)
	w.list(keyNever, s.Constraints.NeverExecute)
	w.list(keyPrefer, s.Constraints.PreferConfirmFor)

	ev := s.Evolution
	w.table(keyEvolution)
	w.kv(keyMaxDelta, formatFloat(ev.MaxParameterDelta, true))
	w.kv(keyCooldown, quote(FormatDuration(ev.Cooldown)))
	w.kv(keyHumanReview, strconv.FormatBool(ev.RequiresHumanReview))
	w.kv(keyBranchType, quote(string(ev.BranchType)))
	if ev.MaxPlaybookTokens != 0 {
		w.kv(keyMaxPBTokens, strconv.Itoa(ev.MaxPlaybookTokens))
	}

	for _, b := range s.Playbook {
		w.arrayTable(keyPlaybook)
		w.kv(keyID, quote(b.ID))
		w.kv(keySection, quote(b.Section))
		w.kv(keyContent, quote(b.Content))
		w.kv(keyHelpful, strconv.Itoa(b.Helpful))
		w.kv(keyHarmful, strconv.Itoa(b.Harmful))
		w.kv(keyNeutral, strconv.Itoa(b.Neutral))
	}

	for _, e := range s.ChangeLog {
		w.arrayTable(keyChangeLog)
		w.kv(keyVersion, quote(e.Version))
		if !e.Date.IsZero() {
			w.kv(keyDate, formatTime(e.Date))
		}
		if len(e.Changes) > 0 {
			rows := make([]string, len(e.Changes))
			for i, c := range e.Changes {
				rows[i] = inline(
					keyParameter, quote(c.Parameter),
					keyFrom, formatFloat(c.From, true),
					keyTo, formatFloat(c.To, true),
					keyReason, optQuote(c.Reason))
			}
			w.rows(keyChanges, rows)
		}
		if len(e.Playbook) > 0 {
			rows := make([]string, len(e.Playbook))
			for i, d := range e.Playbook {
				count := ""
				if d.Count != 0 && (d.Op != OpTag || d.Count != 1) {
					count = strconv.Itoa(d.Count)
				}
				rows[i] = inline(
					keyOp, quote(string(d.Op)),
					keyID, optQuote(d.ID),
					keySection, optQuote(d.Section),
					keyContent, optQuote(d.Content),
					keyTag, optQuote(string(d.Tag)),
					keyCount, count,
					keyReason, optQuote(d.Reason))
			}
			w.rows(keyPlaybook, rows)
		}
	}
	return w.buf.Bytes()
}

// Hash returns the content hash of s: the hex sha256 of Encode(s).
func (s *Strategy) Hash() string {
	sum := sha256.Sum256(s.Encode())
	return hex.EncodeToString(sum[:])
}

// FileName is the conventional file name of this version:
// "<name>-<version>.toml".
func (s *Strategy) FileName() string {
	return s.Metadata.Name + "-" + s.Metadata.Version + ".toml"
}

// WriteFile validates s and writes its canonical form to path, which must
// not exist: a strategy file is immutable once written. The file appears
// complete or not at all.
func (s *Strategy) WriteFile(path string) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("write strategy %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".strategy-*.tmp")
	if err != nil {
		return fmt.Errorf("write strategy: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(s.Encode()); err != nil {
		tmp.Close()
		return fmt.Errorf("write strategy %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write strategy %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write strategy %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write strategy %s: %w", path, err)
	}
	// Link, unlike Rename, refuses to replace an existing file.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write strategy %s: %w (strategy versions are immutable; bump the version)", path, fs.ErrExist)
		}
		return fmt.Errorf("write strategy %s: %w", path, err)
	}
	return nil
}

type encoder struct {
	buf bytes.Buffer
}

func (w *encoder) table(name string) {
	if w.buf.Len() > 0 {
		w.buf.WriteByte('\n')
	}
	fmt.Fprintf(&w.buf, "[%s]\n", name)
}

func (w *encoder) arrayTable(name string) {
	w.buf.WriteByte('\n')
	fmt.Fprintf(&w.buf, "[[%s]]\n", name)
}

func (w *encoder) kv(k, v string) {
	w.buf.WriteString(formatKey(k))
	w.buf.WriteString(" = ")
	w.buf.WriteString(v)
	w.buf.WriteByte('\n')
}

func (w *encoder) optString(k, v string) {
	if v != "" {
		w.kv(k, quote(v))
	}
}

// maxLine is the width up to which an array is written on one line.
const maxLine = 100

// list writes a set of strings, sorted, on one line when it fits.
func (w *encoder) list(k string, vs []string) {
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	items := make([]string, len(sorted))
	for i, v := range sorted {
		items[i] = quote(v)
	}
	one := "[" + strings.Join(items, ", ") + "]"
	if len(formatKey(k))+3+len(one) <= maxLine {
		w.kv(k, one)
		return
	}
	w.rows(k, items)
}

// rows writes an array one element per line, with a trailing comma.
func (w *encoder) rows(k string, items []string) {
	var b strings.Builder
	b.WriteString("[\n")
	for _, it := range items {
		b.WriteString("  ")
		b.WriteString(it)
		b.WriteString(",\n")
	}
	b.WriteString("]")
	w.kv(k, b.String())
}

// inline formats an inline table from key, value pairs, leaving out pairs
// whose value is "".
func inline(kvs ...string) string {
	var parts []string
	for i := 0; i+1 < len(kvs); i += 2 {
		if kvs[i+1] != "" {
			parts = append(parts, formatKey(kvs[i])+" = "+kvs[i+1])
		}
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

func optQuote(s string) string {
	if s == "" {
		return ""
	}
	return quote(s)
}

func formatKey(k string) string {
	if bareKeyRE.MatchString(k) {
		return k
	}
	return quote(k)
}

// quote writes a TOML basic string. Invalid UTF-8 becomes U+FFFD (TOML
// documents are UTF-8; validation rejects such content before writing).
func quote(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// formatFloat writes f in its shortest round-tripping form. For TOML
// (toml=true) the result always reads back as a float: "1.0", not "1".
// Negative zero is written as zero.
func formatFloat(f float64, toml bool) string {
	if f == 0 {
		f = 0 // drop the sign of -0
		if toml {
			return "0.0"
		}
		return "0"
	}
	if math.IsNaN(f) {
		return "nan"
	}
	if math.IsInf(f, 0) {
		if f > 0 {
			return "inf"
		}
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if toml && !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func formatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// oneLine folds a text onto one line, for renderings that promise one
// line per item.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
