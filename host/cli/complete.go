package cli

import (
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Shell completion (sextant completion bash|zsh|fish|powershell) of the
// things a newcomer would otherwise copy by hand: task ids and plugin names.

// completeTasks completes a command's TASK argument with the ids in the
// store the command would use (newest first, at most 200), each described
// by its status and pipeline. No store, no completions: completing never
// creates or reports anything.
func (a *app) completeTasks(sf *storeFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		a.quietLogger()
		s, _, err := a.readTaskStore(cmd.Context(), sf)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer s.Close()
		tasks, err := s.Tasks(cmd.Context(), store.Query{Limit: 200})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return report.TaskCompletions(tasks, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completePlugins completes plugin names on the search path.
func (a *app) completePlugins(pipe *string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		a.quietLogger()
		entries, _ := a.discover(pluginBase(*pipe))
		var out []cobra.Completion
		for _, e := range entries {
			if strings.HasPrefix(e.Name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(e.Name, string(e.Kind)+" "+e.Transport))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// quietLogger gives completion, which runs without the root's pre-run
// hook, a logger that writes nothing into the shell.
func (a *app) quietLogger() {
	if a.logger == nil {
		a.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}
