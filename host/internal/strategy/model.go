package strategy

import (
	"maps"
	"slices"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Strategy is one decoded strategy version. Load and Parse return valid
// strategies; a Strategy built in code can be checked with Validate.
//
// Treat a Strategy as a value: methods that derive a new version (Revise,
// Apply) return a copy and never modify the receiver, and every method only
// reads it, so one Strategy may serve concurrent runs as long as nobody
// changes its fields.
type Strategy struct {
	Metadata Metadata
	// Parameters are the numbers prompts and policies read, by name.
	Parameters map[string]float64
	// ParameterBounds widen or narrow a parameter's range; a parameter
	// without bounds must lie in [0, 1].
	ParameterBounds map[string]Bounds
	Constraints     Constraints
	Evolution       Evolution
	// Playbook is the ACE-style list of learned bullets, in prompt order.
	Playbook []Bullet
	// ChangeLog records each version's changes, oldest first.
	ChangeLog []Entry
}

// Metadata identifies a strategy version and its lineage.
type Metadata struct {
	Name          string
	Version       string // semantic version, e.g. "2.1.0"
	ParentVersion string // the version this one was derived from, if any
	CreatedAt     time.Time
	CreatedBy     string
	Description   string
}

// Bounds is the closed range a parameter must lie in.
type Bounds struct {
	Lo, Hi float64
}

// defaultBounds apply to every parameter not named in [parameter_bounds].
var defaultBounds = Bounds{Lo: 0, Hi: 1}

// Constraints are the action lists of DESIGN §4.1. Each action name is in at
// most one list; names match case-insensitively, with '-' and ' ' read as '_'.
type Constraints struct {
	MustConfirmBefore []string // always ask the user first
	NeverExecute      []string // blocked outright
	PreferConfirmFor  []string // ask when confidence < parameters.user_confirmation
}

// Evolution limits how the strategy may change. The package records these;
// gates enforce them.
type Evolution struct {
	// MaxParameterDelta is the largest change one revision may make to one parameter.
	MaxParameterDelta float64
	// Cooldown is the least time between two promotions (whole seconds).
	Cooldown            time.Duration
	RequiresHumanReview bool
	BranchType          BranchType
	// MaxPlaybookTokens is the playbook's token budget; 0 means no budget.
	MaxPlaybookTokens int
}

// BranchType says what a strategy version is for.
type BranchType string

// The branch types.
const (
	Production   BranchType = "production"
	Experimental BranchType = "experimental"
	Archived     BranchType = "archived"
)

var branchTypes = []string{string(Production), string(Experimental), string(Archived)}

// Valid reports whether b is one of the known branch types.
func (b BranchType) Valid() bool { return slices.Contains(branchTypes, string(b)) }

// Bullet is one playbook entry with its ACE feedback counters.
type Bullet struct {
	ID      string // e.g. "reasoning-00001"; unique within the playbook
	Section string // e.g. "reasoning"
	Content string
	Helpful int
	Harmful int
	Neutral int
}

// Entry is one [[change_log]] element: what one version changed and why.
type Entry struct {
	Version string
	Date    time.Time
	Changes []ParameterChange
	// Playbook lists the delta operations applied to the playbook.
	Playbook []Delta
}

// ParameterChange is one parameter change recorded in the change log.
type ParameterChange struct {
	Parameter string
	From, To  float64
	Reason    string
}

// The keys of a strategy file, table by table, in the order Encode writes
// them. Decoding (unknown keys, did-you-mean), validation messages and
// encoding all read these lists.
const (
	keyMetadata        = "metadata"
	keyParameters      = "parameters"
	keyParameterBounds = "parameter_bounds"
	keyConstraints     = "constraints"
	keyEvolution       = "evolution"
	keyPlaybook        = "playbook"
	keyChangeLog       = "change_log"

	keyName          = "name"
	keyVersion       = "version"
	keyParentVersion = "parent_version"
	keyCreatedAt     = "created_at"
	keyCreatedBy     = "created_by"
	keyDescription   = "description"

	keyMustConfirm = "must_confirm_before"
	keyNever       = "never_execute"
	keyPrefer      = "prefer_confirm_for"

	keyMaxDelta      = "max_parameter_delta"
	keyCooldown      = "cooldown"
	keyHumanReview   = "requires_human_review"
	keyBranchType    = "branch_type"
	keyMaxPBTokens   = "max_playbook_tokens"
	keyID            = "id"
	keySection       = "section"
	keyContent       = "content"
	keyHelpful       = "helpful"
	keyHarmful       = "harmful"
	keyNeutral       = "neutral"
	keyDate          = "date"
	keyChanges       = "changes"
	keyParameter     = "parameter"
	keyFrom          = "from"
	keyTo            = "to"
	keyReason        = "reason"
	keyOp            = "op"
	keyTag           = "tag"
	keyCount         = "count"
	paramUserConfirm = "user_confirmation"
)

var (
	topKeys = []string{keyMetadata, keyParameters, keyParameterBounds, keyConstraints, keyEvolution, keyPlaybook, keyChangeLog}

	metadataKeys   = []string{keyName, keyVersion, keyParentVersion, keyCreatedAt, keyCreatedBy, keyDescription}
	constraintKeys = []string{keyMustConfirm, keyNever, keyPrefer}
	evolutionKeys  = []string{keyMaxDelta, keyCooldown, keyHumanReview, keyBranchType, keyMaxPBTokens}
	bulletKeys     = []string{keyID, keySection, keyContent, keyHelpful, keyHarmful, keyNeutral}
	entryKeys      = []string{keyVersion, keyDate, keyChanges, keyPlaybook}
	changeKeys     = []string{keyParameter, keyFrom, keyTo, keyReason}
	deltaKeys      = []string{keyOp, keyID, keySection, keyContent, keyTag, keyCount, keyReason}
	renamedInSeed  = map[string]string{"evolution_metadata": keyEvolution, "cooldown_period_days": keyCooldown, "cooldown_period": keyCooldown}
	tagNames       = []string{keyHelpful, keyHarmful, keyNeutral}
)

// Clone returns a deep copy of s.
func (s *Strategy) Clone() *Strategy {
	c := *s
	c.Parameters = maps.Clone(s.Parameters)
	c.ParameterBounds = maps.Clone(s.ParameterBounds)
	c.Constraints = Constraints{
		MustConfirmBefore: slices.Clone(s.Constraints.MustConfirmBefore),
		NeverExecute:      slices.Clone(s.Constraints.NeverExecute),
		PreferConfirmFor:  slices.Clone(s.Constraints.PreferConfirmFor),
	}
	c.Playbook = slices.Clone(s.Playbook)
	c.ChangeLog = make([]Entry, len(s.ChangeLog))
	for i, e := range s.ChangeLog {
		e.Changes = slices.Clone(e.Changes)
		e.Playbook = slices.Clone(e.Playbook)
		c.ChangeLog[i] = e
	}
	if s.ChangeLog == nil {
		c.ChangeLog = nil
	}
	return &c
}

// Bounds returns the range parameter name must lie in.
func (s *Strategy) Bounds(name string) Bounds {
	if b, ok := s.ParameterBounds[name]; ok {
		return b
	}
	return defaultBounds
}

// CooldownEnds is the earliest time a successor of s may be promoted:
// created_at plus the cooldown.
func (s *Strategy) CooldownEnds() time.Time {
	return s.Metadata.CreatedAt.Add(s.Evolution.Cooldown)
}

// Empty returns the strategy a pipeline without a [strategy] block runs
// under: version 0.0.0 of name, with no parameters, constraints or
// playbook. A name that is not a valid strategy name becomes "default".
func Empty(name string) *Strategy {
	if !sdk.ValidName(name) {
		name = "default"
	}
	return &Strategy{Metadata: Metadata{Name: name, Version: "0.0.0"},
		Parameters: map[string]float64{}, Evolution: Evolution{BranchType: Production}}
}
