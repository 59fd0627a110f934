package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
)

func newContextCmd(g *globals) *cobra.Command {
	var id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "context --agent ID [--json]",
		Short: "The memory as the agent's prompt shows it: pinned system/ blocks, then the tree of the other files",
		Long: "Renders the agent's memory from the committed HEAD: the system/ blocks in full, then the\n" +
			"other files as a tree with their descriptions. From the daemon when one runs, else from\n" +
			"disk. --json prints {revision, text, tokens, warnings}.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			var c agent.Context
			code, err := g.agentClient(id, 0).do("GET", "/v1/agents/"+id+"/context", nil, &c)
			var unreachable errUnreachable
			switch {
			case errors.As(err, &unreachable) || (err == nil && code == 404):
				cfg, err := g.config()
				if err != nil {
					return err
				}
				if c, err = agent.ReadContext(cfg, id); err != nil {
					return fmt.Errorf("context %s: %w", id, err)
				}
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("context %s: daemon answered %d", id, code)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(c)
			}
			fmt.Fprintln(cmd.OutOrStdout(), c.Text)
			for _, w := range c.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "memfsd: warning:", w)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON answer (env MEMFSD_JSON)")
	return cmd
}
