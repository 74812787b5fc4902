package docgen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/builtins"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// The reference pages of the file formats other than the pipeline: each
// generated from the declaration its loader reads (strategy.Spec, the
// navigators' and the script provider's key tables, builtins.BPMNElements), and
// for expressions and templates from the tables below, whose every key
// TestDocKeysExist finds in the pipeline's declaration.

// formatDocs returns the format pages and JSON Schemas by file name.
func formatDocs() map[string][]byte {
	rules := scriptRulesSpec()
	dagSpec, chainSpec := dagRoutineSpec(), chainRoutineSpec()
	return map[string][]byte{
		"strategy.md":                 []byte(schemaPage("Strategy file", "strategy.toml", strategyIntro, strategy.Spec)),
		"strategy.schema.json":        jsonSchema("sextant strategy", strategy.Spec),
		"script-provider.md":          []byte(schemaPage("Script provider rules", "responses.toml", scriptIntro, rules)),
		"script-provider.schema.json": jsonSchema("sextant script provider rules (responses.toml)", rules),
		"routines.md":                 []byte(routinesPage(dagSpec, chainSpec)),
		"dag.schema.json":             jsonSchema("sextant DAG routine", dagSpec),
		"chain.schema.json":           jsonSchema("sextant chain routine", chainSpec),
		"expressions.md":              []byte(expressionsPage()),
		"templates.md":                []byte(templatesPage()),
	}
}

// formatIndex lists the format pages for the reference index.
const formatIndex = `- [strategy.md](strategy.md): every key of a strategy file
- [routines.md](routines.md): BPMN elements supported and refused; DAG and chain routine keys
- [expressions.md](expressions.md): FEEL and expr-lang, where each is used, ` + "`sextant expr`" + `
- [templates.md](templates.md): the two template forms, what each template sees
- [script-provider.md](script-provider.md): the offline provider's rules file (` + "`responses.toml`" + `)
- [tools.md](tools.md): tools for llm steps (` + "`[tools.NAME]`" + `): MCP servers, tool plugins, the ` + "`records`" + ` plugin; the loop, recording and replay, crashes, strategy constraints on calls
- JSON Schemas for editors: [pipeline](pipeline.schema.json), [strategy](strategy.schema.json),
  [project](project.schema.json), [script rules](script-provider.schema.json),
  [DAG routine](dag.schema.json), [chain routine](chain.schema.json)
`

const strategyIntro = "A strategy is the versioned document a pipeline runs under (`[strategy] file`):\n" +
	"parameters, constraints on actions, evolution limits, the playbook and the change log.\n" +
	"A pipeline without `[strategy]` runs under an empty one (version 0.0.0: no parameters,\n" +
	"constraints or playbook); `evolve` and `gate` need a file. Loading reports every problem\n" +
	"at once as `strategy.toml:LINE: key: message` (exit status 2); beyond these keys and types\n" +
	"it checks versions (parent older than version), parameter bounds, unique bullet ids\n" +
	"and that no action is in two constraint lists. `sextant strategy validate FILE` checks one file."

const scriptIntro = "The `script` provider answers from a rules file, so a pipeline runs offline, with no\n" +
	"API key, and every answer is known. A provider block names it:\n\n" +
	"```toml\n[providers.default]\nuse = \"script\"\nrules = \"responses.toml\"   # relative to the pipeline\n```\n\n" +
	"The first `[[rule]]` whose conditions all hold answers (every condition is optional);\n" +
	"with none, `[default]` answers; with no `[default]` the call fails naming the step.\n" +
	"Replies are Go templates over `.input`, `.vars` and `.match` (the regexp's submatches:\n" +
	"`{{ index .match 1 }}`). Problems are reported as `responses.toml:LINE: rule[N]: …`.\n\n" +
	"```toml\n[[rule]]\nstep = \"classify\"\nmatch = '(?i)invoice (\\d+)'\nwhen = 'input.priority == \"high\"'\n" +
	"reply = '{\"action\": \"flag_financial\", \"invoice\": \"{{ index .match 1 }}\", \"confidence\": 0.9}'\n\n" +
	"[default]\nreply = \"I don't know\"\n```\n\n" +
	"A rule can answer with tool calls (`[[rule.tool_calls]]`), so that a step offering tools\n" +
	"runs offline; `when` and the templates then also see `rounds` (rounds of tool calls since\n" +
	"the last user message), `results` (their tool results: `name`, `content`, `is_error`, and\n" +
	"`json`, the content decoded when it is JSON: `results[0].json.status == \"lost\"`) and\n" +
	"`tools` (the offered tools' names), so one rule calls and the next answers from the result:\n\n" +
	"```toml\n[[rule]]\nstep = \"research\"\nwhen = 'rounds == 0'\n[[rule.tool_calls]]\nname = \"get_weather\"\n" +
	"arguments = '{\"city\": \"{{ .input.city }}\"}'\n\n[[rule]]\nstep = \"research\"\n" +
	"reply = 'It is {{ (index .results 0).content }}.'\n```"

// scriptRulesSpec is the rules file's declaration, from builtins.ScriptRuleKeys
// (and builtins.ScriptToolCallKeys for each rule's [[rule.tool_calls]]).
func scriptRulesSpec() *schema.Block {
	fields := schema.FromConfig(builtins.ScriptRuleKeys)
	for i := range fields {
		if fields[i].Name == "tool_calls" {
			fields[i].Type, fields[i].Block = schema.TableArray, &schema.Block{Fields: schema.FromConfig(builtins.ScriptToolCallKeys)}
		}
	}
	return &schema.Block{Name: "rules", Fields: []schema.Field{
		{Name: "rule", Type: schema.TableArray, Doc: "the rules, tried in order", Block: &schema.Block{Fields: fields}},
		{Name: "default", Type: schema.Table, Doc: "the answer when no rule matches (conditions ignored)", Block: &schema.Block{Fields: fields}},
	}}
}

func dagRoutineSpec() *schema.Block {
	var fields []schema.Field
	for _, f := range schema.FromConfig(builtins.DAGRoutineKeys) {
		if f.Name == "tasks" {
			f.Type, f.Block = schema.TableMap, &schema.Block{Fields: schema.FromConfig(builtins.DAGTaskKeys)}
		}
		fields = append(fields, f)
	}
	return &schema.Block{Name: "dag", Fields: fields}
}

func chainRoutineSpec() *schema.Block {
	var steps []schema.Field
	for _, f := range schema.FromConfig(builtins.ChainStepKeys) {
		if f.Name == "chain" {
			// A sub-chain's steps have these same keys; the declaration
			// does not recurse, so editors accept any keys there.
			f.Type, f.Block = schema.TableArray, &schema.Block{Open: true}
		}
		steps = append(steps, f)
	}
	var fields []schema.Field
	for _, f := range schema.FromConfig(builtins.ChainRoutineKeys) {
		if f.Name == "steps" {
			f.Type, f.Block = schema.TableArray, &schema.Block{Fields: steps}
		}
		fields = append(fields, f)
	}
	return &schema.Block{Name: "chain", Fields: fields}
}

// routinesIntro is routines.md up to its table of BPMN elements.
const routinesIntro = `# Routines

A pipeline's ` + "`[routine]`" + ` names a navigator and a file: ` + "`bpmn`" + ` (BPMN 2.0 XML from Camunda
Modeler or bpmn.io), ` + "`dag`" + ` (a TOML graph of tasks, Airflow's semantics) or ` + "`chain`" + `
(a TOML list of sequential steps), or a third-party navigator plugin. Each routine
node that runs a step is named by a ` + "`[steps.ID]`" + ` block of the pipeline. ` + "`sextant routine\nvalidate FILE`" + ` checks a routine; ` + "`sextant routine simulate FILE`" + ` walks it without running steps.

## BPMN (` + "`navigator = \"bpmn\"`" + `)

Conditions, Zeebe input/output mappings and timer expressions are FEEL (see
[expressions.md](expressions.md)). A task binds to a step by its id, or by its
` + "`zeebe:taskDefinition`" + ` type. Elements not listed here that only declare (data objects,
documentation, lanes, diagrams) are read and ignored; any other element is refused with
its id and line.

### Variables

Variables behave as in Zeebe (Camunda 8), so a diagram from Camunda Modeler reads the
names its conditions and mappings name:

- **The start input's variables are process variables.** With input
  ` + "`{\"order\": {\"amount\": 120}}`" + `, ` + "`=order.amount > 100`" + ` holds; ` + "`=input.order.amount`" + ` reads the
  same value. A process variable of the same name, once written, wins.
- **A step's result merges into the process**, as a Zeebe job's variables do: a step of a
  task with no output mappings that returns ` + "`{\"riskScore\": 6}`" + ` makes ` + "`=riskScore in [5..10]`" + `
  true. With ` + "`zeebe:output`" + ` mappings, the mappings alone decide what is written
  (` + "`<zeebe:output source=\"=s\" target=\"riskScore\"/>`" + ` writes riskScore, not s). A result
  that is not a JSON object (an llm step's text) writes no variable by name.
- **The step's view stays:** the whole result is also the variable named after the step
  (` + "`vars.score`" + `, ` + "`{{ .vars.score.riskScore }}`" + ` in templates), so ` + "`vars.STEP.NAME`" + ` and ` + "`NAME`" + `
  hold the same value after a task without output mappings.
- **Local scopes.** ` + "`zeebe:input`" + ` mappings create local variables of their task or
  sub-process (steps see a task's as ` + "`.token.NAME`" + `). Each instance of a multi-instance
  activity holds its ` + "`inputElement`" + `, ` + "`loopCounter`" + ` and, when ` + "`outputElement`" + ` is a variable
  (` + "`=result`" + `), that variable; ` + "`outputCollection`" + ` is written when the activity completes.
  Written variables propagate as in Zeebe: from the activity's flow scope outward into the
  nearest scope holding that name, else into the process; expressions see the innermost.
- **` + "`zeebe:script`" + `** on a script task is evaluated by the navigator; its value goes to
  ` + "`resultVariable`" + ` (through output mappings when there are some).
- **Business rule tasks.** ` + "`<zeebe:calledDecision decisionId=\"risk-level\" resultVariable=\"level\"/>`" + `
  evaluates the DMN decision of that id from the pipeline's ` + "`[routine] decisions = [\"rules.dmn\"]`" + `
  (` + "`--decisions`" + ` for ` + "`routine validate`" + ` and ` + "`simulate`" + `); no step runs. As in Zeebe the
  decision sees every variable visible at the task by name (input data it does not declare
  included), and its result goes to ` + "`resultVariable`" + ` (through output mappings when there
  are some). An id no file has, or two files have, is a load error at the task's line; a
  failed evaluation (two UNIQUE rules match, an input of the wrong type) stops the run at
  the task's ` + "`FILE:LINE`" + `. Decisions are evaluated by sextant's own DMN engine (` + "`sextant decide`" + `).
- **Camunda 7 extensions.** ` + "`camunda:inputOutput`, `camunda:in`/`camunda:out`" + `, execution
  and task listeners and ` + "`camunda:decisionRef`" + ` are load errors at their line: the navigator
  runs none of them (write ` + "`zeebe:ioMapping` and `zeebe:calledDecision`" + `). What only
  configures the implementation a step replaces or a tasklist (` + "`camunda:class`" + `,
  ` + "`camunda:field`, `camunda:asyncBefore`, `camunda:formKey`" + `, …) is ignored.
- **No silent default.** A condition that gives null (a misspelt or unset variable) or
  anything but a boolean stops the run at the flow's ` + "`FILE:LINE`" + `, as Zeebe raises an
  incident; it is never counted as false. Before a run,
  ` + "`sextant routine validate --pipeline P --input sample.json`" + ` warns about a name that no
  input, step, script, decision or mapping writes, and about a function FEEL lacks
  (` + "`--strict`" + ` makes warnings fail).
- **Timers:** ISO 8601 durations, dates and repetitions, FEEL expressions, and Zeebe's cron
  cycles (Spring's six fields in UTC: ` + "`0 0 9-17 * * MON-FRI`" + `; L, W and # are refused).

| element | supported | what the navigator does |
|---|---|---|
`

func routinesPage(dagSpec, chainSpec *schema.Block) string {
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString(routinesIntro)
	for _, el := range builtins.BPMNElements() {
		yes := "yes"
		if !el.Supported {
			yes = "**refused**"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", el.Tag, yes, mdCell(el.Note))
	}
	b.WriteString("\n## DAG (`navigator = \"dag\"`)\n\n")
	b.WriteString("```toml\nname = \"research\"\n[tasks.plan]\noutputs = [\"urls\"]\n[tasks.fetch]\ndepends_on = [\"plan\"]\nfor_each = \"vars.urls\"\n```\n\n")
	b.WriteString(keyTable(dagSpec))
	b.WriteString("\n## Chain (`navigator = \"chain\"`)\n\n")
	b.WriteString("```toml\nname = \"answer\"\ninputs = [\"question\"]\n[[steps]]\nid = \"draft\"\ninputs = [\"question\"]\noutputs = [\"draft\"]\n```\n\n")
	b.WriteString(keyTable(chainSpec))
	b.WriteString("\nJSON Schemas: [dag.schema.json](dag.schema.json), [chain.schema.json](chain.schema.json).\n")
	return b.String()
}

// keyTable is the key table of schemaPage without its title.
func keyTable(spec *schema.Block) string {
	page := schemaPage("", "", "", spec)
	return page[strings.Index(page, "| key |"):]
}

// docKey is a key of a file format that a hand-written table names.
type docKey struct {
	Spec *schema.Block
	File string // the file it is in, as the page shows it
	Key  string // as schema.Walk names it (steps.NAME.prompt)
	Note string
}

// exprKeys are the pipeline keys whose values are expr-lang expressions.
var exprKeys = []docKey{
	{pipeline.Spec, "pipeline.toml", "score.success", "true when a finished task succeeded (replay's success_rate); sees `output`, `truth`, `input`, `vars`, `strategy`"},
	{pipeline.Spec, "pipeline.toml", "score.reward", "a number in [-1, 1] for the task (the reward metric)"},
	{pipeline.Spec, "pipeline.toml", "steps.NAME.set", "`expr` steps: each value is an expression whose result is assigned to the variable named by its key"},
	{pipeline.Spec, "pipeline.toml", "steps.NAME.confidence", "`action` steps: the confidence compared with `strategy.parameters.user_confirmation`"},
}

// templateKeys are the pipeline keys whose values are Go templates.
var templateKeys = []docKey{
	{pipeline.Spec, "pipeline.toml", "steps.NAME.prompt", "`llm` steps: the user message"},
	{pipeline.Spec, "pipeline.toml", "steps.NAME.system", "`llm` steps: the system message"},
	{pipeline.Spec, "pipeline.toml", "steps.NAME.action", "`action` steps: the action's name, checked against the strategy's constraints"},
	{pipeline.Spec, "pipeline.toml", "steps.NAME.question", "`human` steps: what the run asks when it pauses"},
}

func docKeyTable(keys []docKey) string {
	var b strings.Builder
	b.WriteString("| file | key | use |\n|---|---|---|\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", k.File, k.Key, mdCell(k.Note))
	}
	return b.String()
}

// specKeys lists every key path of spec, as schema.Walk names them.
func specKeys(spec *schema.Block) []string {
	var out []string
	schema.Walk(spec, "", func(k schema.Key) { out = append(out, k.Path) })
	return out
}

func expressionsPage() string {
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString(`# Expressions

sextant evaluates two expression languages, each where its users expect it:

| language | where | why |
|---|---|---|
| [expr-lang](https://expr-lang.org/docs/language-definition) | pipeline keys below, DAG ` + "`when`/`for_each`" + `, chain ` + "`skip_if`" + `, script provider ` + "`when`" + ` | a small, typed Go expression language |
| FEEL (DMN 1.5) | BPMN sequence-flow conditions, conditional events, Zeebe input/output mappings, timer expressions | what Camunda evaluates, so diagrams from Camunda Modeler run unchanged; sextant's own FEEL package, held to the DMN TCK cases |

Both see the same names: ` + "`input`" + ` (the task's input), ` + "`vars`" + ` (variables written by
steps), ` + "`strategy`" + ` (` + "`strategy.parameters.NAME`" + `), and each run variable by its own name
(unless it would hide one of those). ` + "`[score]`" + ` also sees ` + "`output`" + ` (the run's variables
plus ` + "`action`" + `, the last executed action or ` + "`\"none\"`" + `) and ` + "`truth`" + ` (the task's ground
truth, ` + "`sextant run --truth`" + `). References to ` + "`strategy.parameters.*`" + ` and ` + "`vars.*`" + ` are checked
when the pipeline loads.

In DAG and chain routines, name variables as ` + "`vars.NAME`" + ` (or ` + "`vars[\"NAME\"]`" + `): the navigator
then tells the host which variables it reads, and a wasm or process navigator is sent only
those with each call. Any other use of ` + "`vars`" + ` (` + "`vars[input.key]`" + `, ` + "`len(vars)`" + `, ` + "`\"x\" in vars`" + `) works the
same but has every variable sent each time. BPMN routines declare every name their FEEL
expressions look up; one that uses ` + "`vars`" + ` as a whole has every variable sent.

## Pipeline keys that are expr-lang expressions

`)
	b.WriteString(docKeyTable(exprKeys))
	b.WriteString(`
## Trying one: ` + "`sextant expr`" + `

` + "```" + `
sextant expr --set amount=120 'if amount > 100 then "review" else "auto"'      # FEEL, the default
sextant expr --lang expr --set input='{"priority":"high"}' 'input.priority == "high"'
sextant expr --lang expr --json --set vars='{"n":2}' 'vars.n * 2'
` + "```" + `

See [cli/sextant_expr.md](cli/sextant_expr.md) for every flag.
`)
	return b.String()
}

func templatesPage() string {
	var funcs []string
	for name := range pipeline.TemplateFuncs {
		funcs = append(funcs, "`"+name+"`")
	}
	slices.Sort(funcs)
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString(`# Templates

Prompts, system messages, action names and questions are Go
[text/template](https://pkg.go.dev/text/template)s. Two forms look alike and differ:

| form | what it is | example |
|---|---|---|
| ` + "`{{ playbook }}`" + ` | a **function call** (no dot): renders the strategy's playbook, one line per bullet, ` + "`[id] content (+helpful -harmful)`" + ` | ` + "`Playbook:\\n{{ playbook }}`" + ` |
| ` + "`{{ .input.x }}`" + ` | **data** (leading dot): a field of what the template sees | ` + "`Subject: {{ .input.subject }}`" + ` |

What a template sees (its dot):

| name | what |
|---|---|
| ` + "`.input`" + ` | the task's input (` + "`sextant run --input FILE`" + ` or ` + "`--set k=v`" + `) |
| ` + "`.vars`" + ` | variables written by earlier steps (` + "`.vars.classify.action`" + `) |
| ` + "`.strategy`" + ` | the strategy: ` + "`.strategy.parameters.NAME`" + ` |
| ` + "`.token`" + ` | the token's attributes (a DAG ` + "`for_each`" + ` instance: ` + "`.token.index`" + `, ` + "`.token.item`" + `) |
| ` + "`.task`" + ` | the task id |

Functions: ` + strings.Join(funcs, ", ") + `.

A key the data lacks (a misspelt or missing input field) fails the step naming it;
a key present with a null value prints as nothing. Templates are parsed when the
pipeline loads, so a syntax error is a ` + "`pipeline.toml:LINE`" + ` error.

## Pipeline keys that are templates

`)
	b.WriteString(docKeyTable(templateKeys))
	b.WriteString(`
The script provider's ` + "`reply`" + ` is a template too, over ` + "`.input`" + `, ` + "`.vars`" + ` and ` + "`.match`" + `
(see [script-provider.md](script-provider.md)).
`)
	return b.String()
}
