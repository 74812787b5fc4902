package strategy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// Op is a playbook delta operation (ACE): the playbook changes only by these.
type Op string

// The delta operations.
const (
	OpAdd    Op = "ADD"    // append a bullet (Section, Content; ID optional)
	OpUpdate Op = "UPDATE" // replace a bullet's Content and/or Section
	OpTag    Op = "TAG"    // add Count to one of a bullet's counters
	OpRemove Op = "REMOVE" // drop a bullet
)

var opNames = []string{string(OpAdd), string(OpUpdate), string(OpTag), string(OpRemove)}

// Tag names a bullet counter.
type Tag string

// The counters a TAG operation can move.
const (
	TagHelpful Tag = "helpful"
	TagHarmful Tag = "harmful"
	TagNeutral Tag = "neutral"
)

// Delta is one playbook operation, as a curator proposes it and as the
// change log records it.
type Delta struct {
	Op      Op
	ID      string // the bullet; for ADD, empty means "generate section-NNNNN"
	Section string // ADD, and UPDATE to move a bullet
	Content string // ADD, and UPDATE to rewrite a bullet
	Tag     Tag    // TAG
	// Count is what TAG adds to the counter; 0 means 1. It may be negative
	// (a diff of a hand edit) as long as the counter stays ≥ 0.
	Count  int
	Reason string
}

// String renders d on one line, as the diff shows it.
func (d Delta) String() string {
	switch d.Op {
	case OpAdd:
		return fmt.Sprintf("ADD %s [%s] %q", d.ID, d.Section, oneLine(d.Content))
	case OpUpdate:
		s := "UPDATE " + d.ID
		if d.Section != "" {
			s += " [" + d.Section + "]"
		}
		if d.Content != "" {
			s += " " + strconv.Quote(oneLine(d.Content))
		}
		return s
	case OpTag:
		return fmt.Sprintf("TAG %s %s %+d", d.ID, d.Tag, d.count())
	}
	return fmt.Sprintf("%s %s", d.Op, d.ID)
}

func (d Delta) count() int {
	if d.Count == 0 {
		return 1
	}
	return d.Count
}

// shapeProblem checks what a delta must carry whatever playbook it meets.
func (d Delta) shapeProblem() string {
	switch d.Op {
	case OpAdd:
		switch {
		case strings.TrimSpace(d.Content) == "":
			return "ADD needs content"
		case !utf8.ValidString(d.Content):
			return "ADD: content is not valid UTF-8"
		case d.Section == "":
			return "ADD needs a section"
		case !sectionRE.MatchString(d.Section):
			return fmt.Sprintf("ADD: invalid section %q (want letters, digits, '_' and '-')", d.Section)
		case d.ID != "" && !bulletIDRE.MatchString(d.ID):
			return fmt.Sprintf("ADD: invalid id %q (want letters, digits, '.', '_' and '-')", d.ID)
		case d.Tag != "" || d.Count != 0:
			return "ADD takes no tag or count"
		}
	case OpUpdate:
		switch {
		case d.ID == "":
			return "UPDATE needs an id"
		case d.Content == "" && d.Section == "":
			return fmt.Sprintf("UPDATE %s needs content or a section", d.ID)
		case d.Content != "" && strings.TrimSpace(d.Content) == "":
			return fmt.Sprintf("UPDATE %s: content is blank", d.ID)
		case !utf8.ValidString(d.Content):
			return fmt.Sprintf("UPDATE %s: content is not valid UTF-8", d.ID)
		case d.Section != "" && !sectionRE.MatchString(d.Section):
			return fmt.Sprintf("UPDATE %s: invalid section %q (want letters, digits, '_' and '-')", d.ID, d.Section)
		case d.Tag != "" || d.Count != 0:
			return fmt.Sprintf("UPDATE %s takes no tag or count", d.ID)
		}
	case OpTag:
		switch {
		case d.ID == "":
			return "TAG needs an id"
		case !slices.Contains(tagNames, string(d.Tag)):
			return fmt.Sprintf("TAG %s: unknown tag %q%s", d.ID, d.Tag, hintOrWant(string(d.Tag), tagNames, "helpful, harmful or neutral"))
		case d.Content != "" || d.Section != "":
			return fmt.Sprintf("TAG %s takes no content or section", d.ID)
		}
	case OpRemove:
		switch {
		case d.ID == "":
			return "REMOVE needs an id"
		case d.Content != "" || d.Section != "" || d.Tag != "" || d.Count != 0:
			return fmt.Sprintf("REMOVE %s takes only an id", d.ID)
		}
	default:
		return fmt.Sprintf("unknown op %q%s", d.Op, hintOrWant(string(d.Op), opNames, "ADD, UPDATE, TAG or REMOVE"))
	}
	return ""
}

// Applied is the result of applying delta operations.
type Applied struct {
	Strategy *Strategy
	// Ops are the operations that changed the playbook, as the change log
	// records them: generated ids filled in, TAG counts explicit.
	Ops []Delta
	// Duplicates are the ADDs skipped because a bullet already says the
	// same thing.
	Duplicates []Duplicate
}

// Duplicate is an ADD that was dropped, and the bullet it duplicates.
type Duplicate struct {
	Delta Delta
	Of    string
}

// Apply returns a copy of s with the playbook delta operations applied in
// order. The receiver is not modified and no version or change log entry is
// written (Revise does that).
//
// UPDATE, TAG and REMOVE of an id that is not in the playbook (or was
// removed earlier in ops) are errors, as is an ADD with an id that exists.
// An ADD whose content normalizes (NormalizeContent) to that of a bullet
// already in the playbook, or added earlier in ops, is skipped and listed
// in Duplicates. An ADD without an id gets "<section>-NNNNN", one more than
// the highest such number in use. Every problem is reported, each under
// the element "deltas.N"; the error matches sdk.ErrInvalid.
func (s *Strategy) Apply(ops ...Delta) (*Applied, error) {
	out := s.Clone()
	res := &Applied{Strategy: out}
	var probs []sdk.Problem
	fail := func(i int, format string, args ...any) {
		probs = append(probs, sdk.Problem{Element: "deltas." + strconv.Itoa(i), Message: escapeControls(fmt.Sprintf(format, args...))})
	}
	index := func(id string) int {
		return slices.IndexFunc(out.Playbook, func(b Bullet) bool { return b.ID == id })
	}
	for i, d := range ops {
		if msg := d.shapeProblem(); msg != "" {
			fail(i, "%s", msg)
			continue
		}
		if d.Op == OpAdd {
			norm := NormalizeContent(d.Content)
			if j := slices.IndexFunc(out.Playbook, func(b Bullet) bool { return NormalizeContent(b.Content) == norm }); j >= 0 {
				res.Duplicates = append(res.Duplicates, Duplicate{Delta: d, Of: out.Playbook[j].ID})
				continue
			}
			switch {
			case d.ID == "":
				d.ID = nextID(out.Playbook, d.Section)
			case index(d.ID) >= 0:
				fail(i, "ADD %s: id already exists", d.ID)
				continue
			}
			out.Playbook = append(out.Playbook, Bullet{ID: d.ID, Section: d.Section, Content: d.Content})
			res.Ops = append(res.Ops, d)
			continue
		}
		j := index(d.ID)
		if j < 0 {
			fail(i, "%s %s: unknown id%s", d.Op, d.ID, suggest.Hint(d.ID, bulletIDs(out.Playbook)))
			continue
		}
		b := &out.Playbook[j]
		switch d.Op {
		case OpUpdate:
			if d.Content != "" {
				b.Content = d.Content
			}
			if d.Section != "" {
				b.Section = d.Section
			}
		case OpTag:
			d.Count = d.count()
			ctr := map[Tag]*int{TagHelpful: &b.Helpful, TagHarmful: &b.Harmful, TagNeutral: &b.Neutral}[d.Tag]
			if *ctr+d.Count < 0 {
				fail(i, "TAG %s: %s would become %d", d.ID, d.Tag, *ctr+d.Count)
				continue
			}
			*ctr += d.Count
		case OpRemove:
			out.Playbook = slices.Delete(out.Playbook, j, j+1)
		}
		res.Ops = append(res.Ops, d)
	}
	if err := sdk.Invalid(probs...); err != nil {
		return nil, err
	}
	return res, nil
}

func bulletIDs(bs []Bullet) []string {
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids
}

// nextID returns section-NNNNN with NNNNN one more than the highest number
// already used after "section-".
func nextID(bs []Bullet, section string) string {
	highest := 0
	for _, b := range bs {
		if rest, ok := strings.CutPrefix(b.ID, section+"-"); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > highest {
				highest = n
			}
		}
	}
	return fmt.Sprintf("%s-%05d", section, highest+1)
}

// NormalizeContent is the form in which two bullets count as the same for
// ADD deduplication: lower case, every run of characters other than letters
// and digits read as one space, trimmed. So "Ask before bulk deletes!" and
// "ask before  bulk-deletes" are duplicates; "Ask before bulk deletes of
// drafts" is not.
func NormalizeContent(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		space = true
	}
	return b.String()
}
