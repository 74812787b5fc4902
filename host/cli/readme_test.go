package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// readmeMarker precedes a README code block that TestReadme runs.
const readmeMarker = "<!-- readme: tested"

// TestReadme runs the README's tested blocks (each after a readmeMarker
// comment) verbatim as one testscript, from a fresh directory that holds a
// copy of pipelines/ only: every command must succeed, or fail when its
// output comment says "exit status N", and every output comment line (a
// "# …" line after a command) must be in that command's stdout. The task id
// the README writes as 01JD… is the one the last `sextant run` printed.
// Editing the README's commands, or sextant's behaviour, without the other
// fails this test.
func TestReadme(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := readmeScript(string(md))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "readme.txtar"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p := scriptParams(t, dir)
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		return copyTree(filepath.Join(repoRoot(t), "pipelines"), filepath.Join(env.WorkDir, "pipelines"))
	}
	testscript.Run(t, p)
}

// readmeCmd is one README command line as a script step.
type readmeCmd struct {
	line   int
	exec   string   // the testscript exec line, without the leading "!"
	fail   bool     // the README says it exits non-zero
	stdout []string // patterns its stdout must match
	after  []string // script lines to run after the checks (cp stdout FILE, settask)
}

var (
	readmeTaskID = "01JD…"
	readmeExit   = regexp.MustCompile(`exit status ([0-9]+)`)
)

// readmeScript turns the README's tested blocks into a testscript.
func readmeScript(md string) (string, error) {
	var cmds []*readmeCmd
	lines := strings.Split(md, "\n")
	blocks := 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], readmeMarker) {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			return "", fmt.Errorf("README.md:%d: a tested block must follow its marker at once, as ```sh", i+1)
		}
		blocks++
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			line := strings.TrimSpace(lines[i])
			n := i + 1
			switch {
			case line == "":
			case strings.HasPrefix(line, "#"):
				if len(cmds) == 0 {
					return "", fmt.Errorf("README.md:%d: output comment before any command", n)
				}
				c := cmds[len(cmds)-1]
				out, note, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), "←")
				if m := readmeExit.FindStringSubmatch(note); m != nil && m[1] != "0" {
					c.fail = true
				}
				pat := regexp.QuoteMeta(strings.TrimSpace(out))
				pat = strings.ReplaceAll(pat, regexp.QuoteMeta(readmeTaskID), `[0-9A-Z]{26}`)
				c.stdout = append(c.stdout, pat)
			case strings.HasPrefix(line, "make "), line == "go install ./cmd/sextant":
				// the test runs the sextant under test; it does not build
			default:
				c, err := readmeCommand(line, n)
				if err != nil {
					return "", err
				}
				cmds = append(cmds, c)
			}
		}
	}
	if blocks == 0 {
		return "", fmt.Errorf("README.md: no block marked %q", readmeMarker)
	}
	var b strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&b, "# README.md:%d\n", c.line)
		if c.fail {
			b.WriteString("! ")
		}
		b.WriteString(c.exec + "\n")
		for _, p := range c.stdout {
			fmt.Fprintf(&b, "stdout '%s'\n", strings.ReplaceAll(p, "'", "''"))
		}
		for _, a := range c.after {
			b.WriteString(a + "\n")
		}
	}
	return b.String(), nil
}

// readmeCommand converts one README command line.
func readmeCommand(line string, n int) (*readmeCmd, error) {
	if i := strings.Index(line, "  #"); i >= 0 {
		line = strings.TrimSpace(line[:i]) // a remark, not part of the command
	}
	line = strings.Replace(line, "go run ./cmd/sextant ", "sextant ", 1)
	if !strings.HasPrefix(line, "sextant ") {
		return nil, fmt.Errorf("README.md:%d: a tested block holds sextant commands only, not %q", n, line)
	}
	c := &readmeCmd{line: n}
	if cmd, file, ok := strings.Cut(line, " > "); ok {
		line = cmd
		c.after = append(c.after, "cp stdout "+strings.TrimSpace(file))
	}
	if strings.ContainsAny(line, "|;&<>`") {
		return nil, fmt.Errorf("README.md:%d: a tested command may redirect stdout to a file, nothing more: %q", n, line)
	}
	c.exec = "exec " + strings.ReplaceAll(line, readmeTaskID, "$TASK")
	if strings.HasPrefix(line, "sextant run ") {
		c.after = append(c.after, "settask")
	}
	return c, nil
}

// setTask is the script command `settask`: it sets $TASK to the task id the
// last `sextant run` printed on stdout ("task ID …").
func setTask(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: settask")
	}
	m := regexp.MustCompile(`(?m)^task (\S+) `).FindStringSubmatch(ts.ReadFile("stdout"))
	if m == nil {
		ts.Fatalf("settask: no task id in stdout")
	}
	ts.Setenv("TASK", m[1])
}

// TestReadmeScript: the conversion keeps the README's lines and refuses
// what it cannot run as written.
func TestReadmeScript(t *testing.T) {
	md := "<!-- readme: tested -->\n```sh\nsextant run p.toml --input x.json\n# task 01JD… waiting   ← exit status 3\n" +
		"sextant show 01JD… --store a/.sextant   # spans\nsextant export --store s > d.jsonl\nmake test\n```\n"
	got, err := readmeScript(md)
	if err != nil {
		t.Fatal(err)
	}
	want := "# README.md:3\n! exec sextant run p.toml --input x.json\nstdout 'task [0-9A-Z]{26} waiting'\nsettask\n" +
		"# README.md:5\nexec sextant show $TASK --store a/.sextant\n# README.md:6\nexec sextant export --store s\ncp stdout d.jsonl\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	for name, bad := range map[string]string{
		"pipe":      "<!-- readme: tested -->\n```sh\nsextant runs | head\n```\n",
		"other":     "<!-- readme: tested -->\n```sh\ncurl x\n```\n",
		"unmarked":  "```sh\nsextant runs\n```\n",
		"not sh":    "<!-- readme: tested -->\n\n```sh\nsextant runs\n```\n",
		"no output": "<!-- readme: tested -->\n```sh\n# task\n```\n",
	} {
		if _, err := readmeScript(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
