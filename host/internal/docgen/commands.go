package docgen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// allCommands lists root and every visible command below it, by path.
func allCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		out = append(out, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	sort.Slice(out, func(i, j int) bool { return out[i].CommandPath() < out[j].CommandPath() })
	return out
}

func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// commandPage is one command's reference: what it does, usage, examples,
// flags, and links to its parent and subcommands.
func commandPage(c *cobra.Command) string {
	var b strings.Builder
	b.WriteString(generated)
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", c.CommandPath(), c.Short)
	if c.Long != "" {
		b.WriteString(strings.TrimSpace(c.Long) + "\n\n")
	}
	if c.Runnable() {
		fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "## Examples\n\n```sh\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
	}
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Flags\n\n```\n%s```\n\n", flagUsages(fs))
	}
	if fs := c.InheritedFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Global flags\n\n```\n%s```\n\n", flagUsages(fs))
	}
	var links []string
	if p := c.Parent(); p != nil {
		links = append(links, fmt.Sprintf("- [%s](%s): %s", p.CommandPath(), pageName(p), p.Short))
	}
	for _, sub := range c.Commands() {
		if !sub.Hidden && sub.Name() != "help" {
			links = append(links, fmt.Sprintf("- [%s](%s): %s", sub.CommandPath(), pageName(sub), sub.Short))
		}
	}
	if len(links) > 0 {
		b.WriteString("## See also\n\n" + strings.Join(links, "\n") + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// flagUsages is pflag's listing without the help flag every command has.
func flagUsages(fs *pflag.FlagSet) string {
	out := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !f.Hidden {
			out.AddFlag(f)
		}
	})
	return out.FlagUsagesWrapped(100)
}
