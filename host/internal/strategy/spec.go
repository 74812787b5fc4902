package strategy

import "github.com/sextant-dev/sextant/host/internal/schema"

// Spec declares the keys of a strategy file for the reference docs and the
// JSON Schema editors read (docs/reference/strategy.md). Decoding keeps its
// own checker, which also validates meaning (semver order, bounds of each
// parameter, unique bullet ids); TestSpecMatchesDecoder holds the two to the
// same keys, table by table, so the reference cannot drift from the decoder.
var Spec = &schema.Block{Name: "strategy", Fields: []schema.Field{
	{Name: keyMetadata, Type: schema.Table, Required: true, Doc: "what the strategy is and where it came from", Block: &schema.Block{Fields: []schema.Field{
		{Name: keyName, Type: schema.String, Required: true, Doc: "lowercase words joined by - or _, e.g. email-handler"},
		{Name: keyVersion, Type: schema.String, Required: true, Doc: "semantic version, e.g. 2.1.0; sextant evolve writes the next free minor version"},
		{Name: keyParentVersion, Type: schema.String, Doc: "the version this one was derived from (older than version)"},
		{Name: keyCreatedAt, Type: schema.Datetime, Doc: "when this version was made"},
		{Name: keyCreatedBy, Type: schema.String, Doc: "who or what made it, e.g. sextant evolve (greedy)"},
		{Name: keyDescription, Type: schema.String, Doc: "what this version is for"},
	}}},
	{Name: keyParameters, Type: schema.NumberMap, Doc: "numbers prompts and policies read as strategy.parameters.NAME; each in [0, 1] unless [parameter_bounds] says otherwise; user_confirmation is the confidence below which prefer_confirm_for actions ask first"},
	{Name: keyParameterBounds, Type: schema.RangeMap, Doc: "NAME = [lo, hi]: the closed range a parameter must lie in (default [0, 1])"},
	{Name: keyConstraints, Type: schema.Table, Doc: "what action steps may do; names match case-insensitively, with - and space read as _; each name in at most one list", Block: &schema.Block{Fields: []schema.Field{
		{Name: keyMustConfirm, Type: schema.StringList, Doc: "actions that always ask the person first"},
		{Name: keyNever, Type: schema.StringList, Doc: "actions that are blocked outright (a routine that tries one records a violation)"},
		{Name: keyPrefer, Type: schema.StringList, Doc: "actions that ask first when the step's confidence is below parameters.user_confirmation"},
	}}},
	{Name: keyEvolution, Type: schema.Table, Required: true, Doc: "how the strategy may change; the gates enforce it", Block: &schema.Block{Fields: []schema.Field{
		{Name: keyMaxDelta, Type: schema.Number, Required: true, Bound: schema.NonNegative, Doc: "the largest change one revision may make to one parameter (delta-bound gate; the mutators' step); 0: no parameter may move"},
		{Name: keyCooldown, Type: schema.Duration, Doc: `least time between two promotions, e.g. "7d" (cooldown gate)`},
		{Name: keyHumanReview, Type: schema.Bool, Doc: "every candidate waits for sextant review approve (human-review gate)"},
		{Name: keyBranchType, Type: schema.String, Required: true, Enum: branchTypes, Doc: "what this version is for; archived candidates are marked archived"},
		{Name: keyMaxPBTokens, Type: schema.Int, Bound: schema.NonNegative, Doc: "the playbook's token budget (budget gate, curate); 0: no budget"},
	}}},
	{Name: keyPlaybook, Type: schema.TableArray, Doc: "ACE bullets rendered into prompts by {{ playbook }}, in this order; changed only by delta operations", Block: &schema.Block{Fields: []schema.Field{
		{Name: keyID, Type: schema.String, Required: true, Doc: "unique in the playbook, e.g. reasoning-00001"},
		{Name: keySection, Type: schema.String, Required: true, Doc: "a slug grouping bullets, e.g. reasoning"},
		{Name: keyContent, Type: schema.String, Required: true, Doc: "the bullet's text"},
		{Name: keyHelpful, Type: schema.Int, Bound: schema.NonNegative, Doc: "times it helped (TAG helpful)"},
		{Name: keyHarmful, Type: schema.Int, Bound: schema.NonNegative, Doc: "times it hurt (TAG harmful)"},
		{Name: keyNeutral, Type: schema.Int, Bound: schema.NonNegative, Doc: "times it made no difference (TAG neutral)"},
	}}},
	{Name: keyChangeLog, Type: schema.TableArray, Doc: "what each version changed and why, oldest first (written by evolve and review approve)", Block: &schema.Block{Fields: []schema.Field{
		{Name: keyVersion, Type: schema.String, Required: true, Doc: "the version this entry describes"},
		{Name: keyDate, Type: schema.Datetime, Doc: "when"},
		{Name: keyChanges, Type: schema.TableArray, Doc: "parameter changes", Block: &schema.Block{Fields: []schema.Field{
			{Name: keyParameter, Type: schema.String, Required: true, Doc: "the parameter"},
			{Name: keyFrom, Type: schema.Number, Doc: "its old value"},
			{Name: keyTo, Type: schema.Number, Doc: "its new value"},
			{Name: keyReason, Type: schema.String, Doc: "the evidence, e.g. replay: success_rate +0.090 [+0.050, +0.130], p<0.001, n=200"},
		}}},
		{Name: keyPlaybook, Type: schema.TableArray, Doc: "playbook delta operations applied", Block: &schema.Block{Fields: []schema.Field{
			{Name: keyOp, Type: schema.String, Required: true, Enum: opNames, Doc: "the operation"},
			{Name: keyID, Type: schema.String, Doc: "the bullet (UPDATE, TAG, REMOVE; optional for ADD)"},
			{Name: keySection, Type: schema.String, Doc: "its section (ADD, UPDATE)"},
			{Name: keyContent, Type: schema.String, Doc: "its text (ADD, UPDATE)"},
			{Name: keyTag, Type: schema.String, Enum: tagNames, Doc: "the counter TAG adds to"},
			{Name: keyCount, Type: schema.Int, Doc: "how much TAG adds"},
			{Name: keyReason, Type: schema.String, Doc: "why"},
		}}},
	}}},
}}
