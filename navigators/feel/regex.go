package feel

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// FEEL's string functions take XML Schema / XPath regular expressions;
// compileXSD translates the common ones into Go's RE2 syntax. Patterns RE2
// cannot express (back-references) make the function return null.

var (
	reMu    sync.Mutex
	reCache = map[string]*regexp.Regexp{}
)

const reCacheMax = 512

func compileXSD(pattern, flags string) (*regexp.Regexp, bool) {
	key := flags + "\x00" + pattern
	reMu.Lock()
	re, ok := reCache[key]
	reMu.Unlock()
	if ok {
		return re, re != nil
	}
	re = translateXSD(pattern, flags)
	reMu.Lock()
	if len(reCache) >= reCacheMax {
		reCache = map[string]*regexp.Regexp{}
	}
	reCache[key] = re
	reMu.Unlock()
	return re, re != nil
}

var blocks = map[string]string{
	"IsBasicLatin":           `\x00-\x7F`,
	"IsLatin-1Supplement":    `\x{80}-\x{FF}`,
	"IsLatinExtended-A":      `\x{100}-\x{17F}`,
	"IsGreek":                `\x{370}-\x{3FF}`,
	"IsGreekandCoptic":       `\x{370}-\x{3FF}`,
	"IsCyrillic":             `\x{400}-\x{4FF}`,
	"IsArabic":               `\x{600}-\x{6FF}`,
	"IsHebrew":               `\x{590}-\x{5FF}`,
	"IsCJKUnifiedIdeographs": `\x{4E00}-\x{9FFF}`,
}

func translateXSD(pattern, flags string) *regexp.Regexp {
	var prefix strings.Builder
	strip := false
	for _, f := range flags {
		switch f {
		case 's', 'm', 'i':
			prefix.WriteRune(f)
		case 'x':
			strip = true
		case 'q':
			pattern = regexp.QuoteMeta(pattern)
		default:
			return nil
		}
	}
	rs := []rune(pattern)
	var b strings.Builder
	if prefix.Len() > 0 {
		b.WriteString("(?" + prefix.String() + ")")
	}
	depth := 0 // inside a character class
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case strip && depth == 0 && unicode.IsSpace(r):
			continue
		case r == '\\' && i+1 < len(rs):
			n := rs[i+1]
			if (n == 'p' || n == 'P') && i+2 < len(rs) && rs[i+2] == '{' {
				end := i + 3
				for end < len(rs) && rs[end] != '}' {
					end++
				}
				if end >= len(rs) {
					return nil
				}
				name := string(rs[i+3 : end])
				if strip {
					name = strings.Join(strings.Fields(name), "")
				}
				if rng, ok := blocks[name]; ok {
					switch {
					case depth > 0 && n == 'p':
						b.WriteString(rng)
					case n == 'p':
						b.WriteString("[" + rng + "]")
					case depth == 0:
						b.WriteString("[^" + rng + "]")
					default:
						return nil
					}
				} else {
					b.WriteString(`\` + string(n) + "{" + name + "}")
				}
				i = end
				continue
			}
			if n >= '1' && n <= '9' && depth == 0 {
				return nil // back-reference
			}
			b.WriteRune(r)
			b.WriteRune(n)
			i++
		case r == '[':
			if depth > 0 {
				return nil
			}
			// A class with subtraction, [A-Z-[OI]], is expanded here.
			if end, sub := classEnd(rs, i); sub {
				cls, ok := subtractClass(rs[i+1 : end+1])
				if !ok {
					return nil
				}
				b.WriteString(cls)
				i = end + 1
				if i >= len(rs) || rs[i] != ']' {
					return nil
				}
				continue
			}
			depth++
			b.WriteRune(r)
			if i+1 < len(rs) && rs[i+1] == '^' {
				b.WriteRune('^')
				i++
			}
			if i+1 < len(rs) && rs[i+1] == ']' { // a literal ] first in the class
				b.WriteString(`\]`)
				i++
			}
		case r == ']' && depth > 0:
			depth--
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return re
}

// classEnd finds the "-[" of a subtraction in the class opening at i and
// returns the index of the inner class's "]".
func classEnd(rs []rune, i int) (int, bool) {
	for j := i + 1; j < len(rs); j++ {
		switch rs[j] {
		case '\\':
			j++
		case ']':
			return 0, false
		case '-':
			if j+1 < len(rs) && rs[j+1] == '[' {
				for k := j + 2; k < len(rs); k++ {
					if rs[k] == '\\' {
						k++
						continue
					}
					if rs[k] == ']' {
						return k, true
					}
				}
				return 0, false
			}
		}
	}
	return 0, false
}

// subtractClass turns "A-Z-[OI]" (literal members and ranges only) into an
// explicit class.
func subtractClass(body []rune) (string, bool) {
	s := string(body)
	k := strings.Index(s, "-[")
	if k < 0 || !strings.HasSuffix(s, "]") {
		return "", false
	}
	outer, ok1 := classRunes([]rune(s[:k]))
	inner, ok2 := classRunes([]rune(s[k+2 : len(s)-1]))
	if !ok1 || !ok2 {
		return "", false
	}
	neg := false
	if strings.HasPrefix(s, "^") {
		return "", false
	}
	var b strings.Builder
	b.WriteByte('[')
	if neg {
		b.WriteByte('^')
	}
	n := 0
	for r := rune(0); r <= 0xFFFF; r++ {
		if outer(r) && !inner(r) {
			start := r
			for r+1 <= 0xFFFF && outer(r+1) && !inner(r+1) {
				r++
			}
			b.WriteString(regexp.QuoteMeta(string(start)))
			if r > start {
				b.WriteByte('-')
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
			n++
		}
	}
	b.WriteByte(']')
	if n == 0 {
		return "", false
	}
	return b.String(), true
}

func classRunes(body []rune) (func(rune) bool, bool) {
	type span struct{ lo, hi rune }
	var spans []span
	for i := 0; i < len(body); i++ {
		r := body[i]
		if r == '\\' {
			if i+1 >= len(body) || unicode.IsLetter(body[i+1]) {
				return nil, false
			}
			i++
			r = body[i]
		} else if r == '[' || r == ']' {
			return nil, false
		}
		if i+2 < len(body) && body[i+1] == '-' {
			spans = append(spans, span{r, body[i+2]})
			i += 2
			continue
		}
		spans = append(spans, span{r, r})
	}
	return func(x rune) bool {
		for _, s := range spans {
			if x >= s.lo && x <= s.hi {
				return true
			}
		}
		return false
	}, true
}

// xpathReplacement converts an XPath replacement ($1, \$) to Go's Expand
// syntax (${1}, $$).
func xpathReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
		case c == '$':
			j := i + 1
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			if j == i+1 {
				b.WriteString("$$")
				continue
			}
			b.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
