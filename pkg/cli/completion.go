package cli

import (
	"github.com/spf13/cobra"
)

func (a *app) completionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Example: `  # bash, this shell
  source <(mcpmon completion bash)
  # zsh, every shell
  mcpmon completion zsh > "${fpath[1]}/_mcpmon"
  # fish
  mcpmon completion fish > ~/.config/fish/completions/mcpmon.fish`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1, "a shell: bash, zsh, fish or powershell"),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), a.io.Stdout
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return usagef("unknown shell %q: want bash, zsh, fish or powershell", args[0])
		},
	}
}
