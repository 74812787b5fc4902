package strategy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is a parsed semantic version (semver.org 2.0.0), without a "v".
type Version struct {
	Major, Minor, Patch uint64
	Pre                 string // pre-release, without the "-"
	Build               string // build metadata, without the "+"
}

var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$`)

// ParseVersion parses a semantic version such as "2.1.0" or "3.0.0-rc.1".
func ParseVersion(s string) (Version, error) {
	m := semverRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("%q is not a semantic version (want e.g. 1.2.0)", s)
	}
	var v Version
	var err error
	for i, p := range []*uint64{&v.Major, &v.Minor, &v.Patch} {
		if *p, err = strconv.ParseUint(m[i+1], 10, 64); err != nil {
			return Version{}, fmt.Errorf("%q is not a semantic version: %w", s, err)
		}
	}
	v.Pre, v.Build = m[4], m[5]
	return v, nil
}

// String formats v as MAJOR.MINOR.PATCH[-PRE][+BUILD].
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// BumpMinor returns the next minor version: 2.0.3 → 2.1.0. Pre-release and
// build metadata are dropped (2.1.0-rc.1 → 2.2.0).
func (v Version) BumpMinor() (Version, error) {
	if v.Minor == ^uint64(0) {
		return Version{}, fmt.Errorf("bump %s: minor version overflows", v)
	}
	return Version{Major: v.Major, Minor: v.Minor + 1}, nil
}

// BumpMinor parses s and returns its next minor version as a string.
func BumpMinor(s string) (string, error) {
	v, err := ParseVersion(s)
	if err != nil {
		return "", fmt.Errorf("bump version: %w", err)
	}
	n, err := v.BumpMinor()
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

// Compare orders versions by semver precedence: -1 if v < w, 0 if equal
// (build metadata is ignored), +1 if v > w.
func (v Version) Compare(w Version) int {
	a, b := v, w
	for _, d := range [][2]uint64{{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case a.Pre == b.Pre:
		return 0
	case a.Pre == "":
		return 1 // a release ranks above its pre-releases
	case b.Pre == "":
		return -1
	}
	ap, bp := strings.Split(a.Pre, "."), strings.Split(b.Pre, ".")
	for i := 0; i < len(ap) && i < len(bp); i++ {
		if c := comparePre(ap[i], bp[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(ap) < len(bp):
		return -1
	case len(ap) > len(bp):
		return 1
	}
	return 0
}

// comparePre compares pre-release identifiers: numeric ones numerically and
// below alphanumeric ones, which compare in ASCII order.
func comparePre(a, b string) int {
	an, aErr := strconv.ParseUint(a, 10, 64)
	bn, bErr := strconv.ParseUint(b, 10, 64)
	switch {
	case aErr == nil && bErr == nil:
		switch {
		case an < bn:
			return -1
		case an > bn:
			return 1
		}
		return 0
	case aErr == nil:
		return -1
	case bErr == nil:
		return 1
	}
	return strings.Compare(a, b)
}
