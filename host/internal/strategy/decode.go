package strategy

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// Load reads and validates the strategy file at path. Every problem is
// reported, one per line, each as `path:line: key.path: message`; the error
// matches sdk.ErrInvalid.
func Load(path string) (*Strategy, error) {
	data, err := readfile.Prefix(path, tomlpos.MaxSize+1)
	if err != nil {
		return nil, sdk.Invalid(sdk.Problem{File: path, Message: fmt.Sprintf("read strategy: %v", unwrapPath(err))})
	}
	return Parse(path, data)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse decodes and validates strategy data read from file (used only to
// position problems).
func Parse(file string, data []byte) (*Strategy, error) {
	ix, err := tomlpos.Scan(file, data)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, sdk.Invalid(syntaxProblem(file, err))
	}
	c := newChecker(file, ix)
	s := c.decode(doc)
	c.validate(s)
	if err := c.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// syntaxProblem positions a TOML syntax error. Decoding into generic values
// cannot fail on types, so this is the only decoder error.
func syntaxProblem(file string, err error) sdk.Problem {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return sdk.Problem{File: file, Line: pe.Position.Line, Message: "toml: " + escapeControls(lowerMessage(pe.Message))}
	}
	return sdk.Problem{File: file, Message: escapeControls(lowerMessage(strings.TrimPrefix(err.Error(), "toml: ")))}
}

// lowerMessage follows the house style for a library's message: first
// letter lower case (unless it starts an acronym), no final period.
func lowerMessage(m string) string {
	m = strings.TrimSuffix(strings.TrimSpace(m), ".")
	r, n := utf8.DecodeRuneInString(m)
	if n > 0 && unicode.IsUpper(r) {
		if r2, _ := utf8.DecodeRuneInString(m[n:]); !unicode.IsUpper(r2) {
			m = string(unicode.ToLower(r)) + m[n:]
		}
	}
	return m
}

// escapeControls keeps a message on one line whatever input it quotes:
// control characters are written as Go escapes (\n, \x00).
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checker collects positioned problems. It serves both decoding (types,
// unknown keys) and validation (meaning), so that a strategy built in code
// is checked by the same rules as a file, just without lines.
type checker struct {
	file string
	ix   *tomlpos.Index  // nil for a strategy built in code
	bad  map[string]bool // key paths with a type error: no further checks
	// misspelt are keys an unknown key probably meant: not "missing" too.
	misspelt map[string]bool
	probs    []sdk.Problem
}

func newChecker(file string, ix *tomlpos.Index) *checker {
	return &checker{file: file, ix: ix, bad: map[string]bool{}, misspelt: map[string]bool{}}
}

type path []string

func (p path) with(elems ...any) path {
	out := make(path, len(p), len(p)+len(elems)) // one allocation: a strategy has many paths
	copy(out, p)
	for _, e := range elems {
		switch e := e.(type) {
		case string:
			out = append(out, e)
		case int:
			out = append(out, strconv.Itoa(e))
		}
	}
	return out
}

func (p path) key() string { return strings.Join(p, ".") }

var bareKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// String shows the path as a user reads it, quoting any element that is not
// a bare TOML key.
func (p path) String() string {
	parts := make([]string, len(p))
	for i, e := range p {
		if bareKeyRE.MatchString(e) {
			parts[i] = e
		} else {
			parts[i] = strconv.Quote(e)
		}
	}
	return strings.Join(parts, ".")
}

// addf records a problem at p unless p or one of its ancestors already has
// a type error (its value was not decoded, so any other message misleads).
func (c *checker) addf(p path, format string, args ...any) {
	for i := len(p); i > 0; i-- {
		if c.bad[p[:i].key()] {
			return
		}
	}
	c.probs = append(c.probs, sdk.Problem{File: c.file, Line: c.ix.Line(p...), Element: p.String(), Message: escapeControls(fmt.Sprintf(format, args...))})
}

// typeErr records a type problem at p and stops later checks of p.
func (c *checker) typeErr(p path, want string, v any) {
	c.addf(p, "want %s, got %s", want, describe(v))
	c.bad[p.key()] = true
}

// missing reports a required value: absent, or present but empty.
func (c *checker) missing(p path, hint string) {
	if c.misspelt[p.key()] {
		return // reported as the misspelt key
	}
	if c.ix.Has(p...) {
		c.addf(p, "must not be empty%s", hint)
		return
	}
	c.addf(p, "missing%s", hint)
}

func (c *checker) err() error {
	sort.SliceStable(c.probs, func(i, j int) bool { return c.probs[i].Line < c.probs[j].Line })
	return sdk.Invalid(c.probs...)
}

// describe names a decoded TOML value's type and shows it, for messages.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", truncate(v, 40))
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return "float " + strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return fmt.Sprintf("boolean %t", v)
	case time.Time:
		return "datetime " + v.Format(time.RFC3339Nano)
	case []any, []map[string]any:
		return "array"
	case map[string]any:
		return "table"
	}
	return fmt.Sprintf("%T", v)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// keys checks m's keys against known; unknown keys are problems with a
// did-you-mean, reported in key order.
func (c *checker) keys(p path, m map[string]any, known []string) {
	if known == nil {
		return
	}
	clean := true
	for k := range m {
		if !slices.Contains(known, k) {
			clean = false
			break
		}
	}
	if clean { // the common case, without sorting
		return
	}
	for _, k := range sortedKeys(m) {
		if known != nil && !slices.Contains(known, k) {
			c.unknown(p.with(k), k, known)
		}
	}
}

func (c *checker) unknown(p path, k string, known []string) {
	meant := suggest.Closest(k, known)
	if to, ok := renamedInSeed[k]; ok && slices.Contains(known, to) {
		meant = to
	}
	hint := ""
	if meant != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", meant)
		c.misspelt[p[:len(p)-1].with(meant).key()] = true
	}
	c.addf(p, "unknown key%s", hint)
	c.bad[p.key()] = true
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Typed accessors. Each returns false (having recorded the problem) when v
// has the wrong type; an absent value (nil) is not a problem here.

func (c *checker) table(p path, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.typeErr(p, "a table", v)
	}
	return m, ok
}

func (c *checker) str(p path, v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	if !ok {
		c.typeErr(p, "a string", v)
	}
	return s, ok
}

func (c *checker) number(p path, v any) (float64, bool) {
	switch v := v.(type) {
	case nil:
		return 0, true
	case int64:
		return float64(v), true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c.addf(p, "want a finite number, got %s", describe(v))
			c.bad[p.key()] = true
			return 0, false
		}
		return v, true
	}
	c.typeErr(p, "a number", v)
	return 0, false
}

func (c *checker) integer(p path, v any) (int, bool) {
	if v == nil {
		return 0, true
	}
	n, ok := v.(int64)
	if !ok {
		c.typeErr(p, "an integer", v)
		return 0, false
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		c.addf(p, "%d is out of range", n)
		c.bad[p.key()] = true
		return 0, false
	}
	return int(n), true
}

func (c *checker) boolean(p path, v any) (bool, bool) {
	if v == nil {
		return false, true
	}
	b, ok := v.(bool)
	if !ok {
		c.typeErr(p, "a boolean", v)
	}
	return b, ok
}

// datetime accepts only an offset datetime: a strategy's times are
// instants, and a local datetime would mean different instants on
// different machines.
func (c *checker) datetime(p path, v any) (time.Time, bool) {
	if v == nil {
		return time.Time{}, true
	}
	t, ok := v.(time.Time)
	if s, isStr := v.(string); isStr {
		if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
			c.addf(p, "want a datetime, got a string (write it without quotes: %s)", s)
			c.bad[p.key()] = true
			return time.Time{}, false
		}
	}
	if !ok {
		c.typeErr(p, "a datetime such as 2026-02-09T10:30:00Z", v)
		return time.Time{}, false
	}
	switch t.Location().String() {
	case "datetime-local", "date-local", "time-local":
		c.addf(p, "want a datetime with a time zone offset such as 2026-02-09T10:30:00Z, got local %s", strings.TrimSuffix(t.Location().String(), "-local"))
		c.bad[p.key()] = true
		return time.Time{}, false
	}
	return t.UTC(), true
}

func (c *checker) strings(p path, v any) ([]string, bool) {
	if v == nil {
		return nil, true
	}
	arr, ok := v.([]any)
	if !ok {
		c.typeErr(p, "an array of strings", v)
		return nil, false
	}
	out := make([]string, 0, len(arr))
	all := true
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			c.typeErr(p.with(i), "a string", e)
			all = false
		}
		out = append(out, s)
	}
	return out, all
}

// tables accepts an array of tables, [[x]] or x = [{…}, {…}].
func (c *checker) tables(p path, v any) []map[string]any {
	switch v := v.(type) {
	case nil:
		return nil
	case []map[string]any:
		return v
	case []any:
		out := make([]map[string]any, len(v))
		for i, e := range v {
			m, ok := e.(map[string]any)
			if !ok {
				c.typeErr(p.with(i), "a table", e)
				m = nil
			}
			out[i] = m
		}
		return out
	}
	c.typeErr(p, "an array of tables", v)
	return nil
}

// decode turns the generic document into a Strategy, recording type
// problems and unknown keys. Elements of arrays are kept even when broken,
// so that indexes in later messages match the file.
func (c *checker) decode(doc map[string]any) *Strategy {
	s := &Strategy{}
	c.keys(nil, doc, topKeys)
	if m, ok := c.optTable(path{keyMetadata}, doc[keyMetadata], metadataKeys); ok {
		md := &s.Metadata
		c.strField(path{keyMetadata, keyName}, m[keyName], &md.Name)
		c.strField(path{keyMetadata, keyVersion}, m[keyVersion], &md.Version)
		c.strField(path{keyMetadata, keyParentVersion}, m[keyParentVersion], &md.ParentVersion)
		md.CreatedAt, _ = c.datetime(path{keyMetadata, keyCreatedAt}, m[keyCreatedAt])
		c.strField(path{keyMetadata, keyCreatedBy}, m[keyCreatedBy], &md.CreatedBy)
		c.strField(path{keyMetadata, keyDescription}, m[keyDescription], &md.Description)
	}
	if m, ok := c.optTable(path{keyParameters}, doc[keyParameters], nil); ok && m != nil {
		s.Parameters = map[string]float64{}
		for _, k := range sortedKeys(m) {
			s.Parameters[k], _ = c.number(path{keyParameters, k}, m[k])
		}
	}
	if m, ok := c.optTable(path{keyParameterBounds}, doc[keyParameterBounds], nil); ok && m != nil {
		s.ParameterBounds = map[string]Bounds{}
		for _, k := range sortedKeys(m) {
			if b, ok := c.bounds(path{keyParameterBounds, k}, m[k]); ok {
				s.ParameterBounds[k] = b
			}
		}
	}
	if m, ok := c.optTable(path{keyConstraints}, doc[keyConstraints], constraintKeys); ok {
		s.Constraints.MustConfirmBefore, _ = c.strings(path{keyConstraints, keyMustConfirm}, m[keyMustConfirm])
		s.Constraints.NeverExecute, _ = c.strings(path{keyConstraints, keyNever}, m[keyNever])
		s.Constraints.PreferConfirmFor, _ = c.strings(path{keyConstraints, keyPrefer}, m[keyPrefer])
	}
	if m, ok := c.optTable(path{keyEvolution}, doc[keyEvolution], evolutionKeys); ok {
		ev := &s.Evolution
		ev.MaxParameterDelta, _ = c.number(path{keyEvolution, keyMaxDelta}, m[keyMaxDelta])
		cp := path{keyEvolution, keyCooldown}
		if cd, ok := m[keyCooldown].(string); !ok && m[keyCooldown] != nil {
			c.typeErr(cp, `a duration such as "7d"`, m[keyCooldown])
		} else if ok {
			d, err := ParseDuration(cd)
			if err != nil {
				c.addf(cp, "%v", err)
				c.bad[cp.key()] = true
			}
			ev.Cooldown = d
		}
		ev.RequiresHumanReview, _ = c.boolean(path{keyEvolution, keyHumanReview}, m[keyHumanReview])
		var bt string
		c.strField(path{keyEvolution, keyBranchType}, m[keyBranchType], &bt)
		ev.BranchType = BranchType(bt)
		ev.MaxPlaybookTokens, _ = c.integer(path{keyEvolution, keyMaxPBTokens}, m[keyMaxPBTokens])
	}
	for i, m := range c.tables(path{keyPlaybook}, doc[keyPlaybook]) {
		p := path{keyPlaybook}.with(i)
		var b Bullet
		if m != nil {
			c.keys(p, m, bulletKeys)
			c.strField(p.with(keyID), m[keyID], &b.ID)
			c.strField(p.with(keySection), m[keySection], &b.Section)
			c.strField(p.with(keyContent), m[keyContent], &b.Content)
			b.Helpful, _ = c.integer(p.with(keyHelpful), m[keyHelpful])
			b.Harmful, _ = c.integer(p.with(keyHarmful), m[keyHarmful])
			b.Neutral, _ = c.integer(p.with(keyNeutral), m[keyNeutral])
		}
		s.Playbook = append(s.Playbook, b)
	}
	for i, m := range c.tables(path{keyChangeLog}, doc[keyChangeLog]) {
		s.ChangeLog = append(s.ChangeLog, c.entry(path{keyChangeLog}.with(i), m))
	}
	return s
}

func (c *checker) optTable(p path, v any, known []string) (map[string]any, bool) {
	if v == nil {
		return nil, true
	}
	m, ok := c.table(p, v)
	if ok {
		c.keys(p, m, known)
	}
	return m, ok
}

func (c *checker) strField(p path, v any, dst *string) {
	*dst, _ = c.str(p, v)
}

func (c *checker) bounds(p path, v any) (Bounds, bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		c.typeErr(p, "[lo, hi]", v)
		return Bounds{}, false
	}
	lo, ok1 := c.number(p.with(0), arr[0])
	hi, ok2 := c.number(p.with(1), arr[1])
	if !ok1 || !ok2 {
		c.bad[p.key()] = true
	}
	return Bounds{Lo: lo, Hi: hi}, ok1 && ok2
}

func (c *checker) entry(p path, m map[string]any) Entry {
	var e Entry
	if m == nil {
		return e
	}
	c.keys(p, m, entryKeys)
	c.strField(p.with(keyVersion), m[keyVersion], &e.Version)
	e.Date, _ = c.datetime(p.with(keyDate), m[keyDate])
	for j, cm := range c.tables(p.with(keyChanges), m[keyChanges]) {
		cp := p.with(keyChanges, j)
		var ch ParameterChange
		if cm != nil {
			c.keys(cp, cm, changeKeys)
			c.strField(cp.with(keyParameter), cm[keyParameter], &ch.Parameter)
			ch.From, _ = c.number(cp.with(keyFrom), cm[keyFrom])
			ch.To, _ = c.number(cp.with(keyTo), cm[keyTo])
			c.strField(cp.with(keyReason), cm[keyReason], &ch.Reason)
		}
		e.Changes = append(e.Changes, ch)
	}
	for j, dm := range c.tables(p.with(keyPlaybook), m[keyPlaybook]) {
		dp := p.with(keyPlaybook, j)
		var d Delta
		if dm != nil {
			c.keys(dp, dm, deltaKeys)
			var op string
			c.strField(dp.with(keyOp), dm[keyOp], &op)
			d.Op = Op(op)
			c.strField(dp.with(keyID), dm[keyID], &d.ID)
			c.strField(dp.with(keySection), dm[keySection], &d.Section)
			c.strField(dp.with(keyContent), dm[keyContent], &d.Content)
			var tag string
			c.strField(dp.with(keyTag), dm[keyTag], &tag)
			d.Tag = Tag(tag)
			d.Count, _ = c.integer(dp.with(keyCount), dm[keyCount])
			switch {
			case d.Op == OpTag && dm[keyCount] == nil:
				d.Count = 1
			case dm[keyCount] != nil && d.Count == 0 && !c.bad[dp.with(keyCount).key()]:
				c.addf(dp.with(keyCount), "must not be 0 (leave it out for 1)")
			}
			c.strField(dp.with(keyReason), dm[keyReason], &d.Reason)
		}
		e.Playbook = append(e.Playbook, d)
	}
	return e
}
