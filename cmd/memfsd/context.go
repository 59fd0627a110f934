package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
)

func newContextCmd(g *globals) *cobra.Command {
	var id string
	var asJSON bool
	var format string
	cmd := &cobra.Command{
		Use:   "context --agent ID [--format memfsd|letta-code|letta-local] [--json]",
		Short: "The memory as the agent's prompt shows it: pinned system/ blocks, then the tree of the other files",
		Long: "Renders the agent's memory from the committed HEAD: the system/ blocks in full, then the\n" +
			"other files as a tree with their descriptions. From the daemon when one runs, else from\n" +
			"disk. --format letta-code prints what letta-code's buildParentMemorySnapshot renders\n" +
			"(memfs v1, or v2 when the root has a MEMORY.md), letta-local its local backend's\n" +
			"projection, byte for byte. --json prints {format, revision, text, tokens, warnings}.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			format, err := agent.ParseContextFormat(format)
			if err != nil {
				return fmt.Errorf("flag --format: %w", err)
			}
			var c agent.Context
			code, err := g.agentClient(id, 0).do("GET", "/v1/agents/"+id+"/context?format="+format, nil, &c)
			var unreachable errUnreachable
			switch {
			case errors.As(err, &unreachable) || (err == nil && code == 404):
				cfg, err := g.config()
				if err != nil {
					return err
				}
				if c, err = agent.ReadContext(cfg, id, format); err != nil {
					return fmt.Errorf("context %s: %w", id, err)
				}
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("context %s: daemon answered %d", id, code)
			case c.Format != format: // a daemon from before --format renders its own
				return fmt.Errorf("context %s: the running daemon rendered format %q, not %q: restart it with this memfsd", id, c.Format, format)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), c)
			}
			if format == agent.FormatMemfsd {
				fmt.Fprintln(cmd.OutOrStdout(), c.Text)
			} else { // letta-code's bytes exactly, as its prompt gets them
				fmt.Fprint(cmd.OutOrStdout(), c.Text)
			}
			for _, w := range c.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "memfsd: warning:", w)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().StringVar(&format, "format", agent.FormatMemfsd, "memfsd, letta-code or letta-local (env MEMFSD_FORMAT)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON answer (env MEMFSD_JSON)")
	return cmd
}
