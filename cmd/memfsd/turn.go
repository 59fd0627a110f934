package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/daemon"
)

func newTurnCmd(g *globals) *cobra.Command {
	var id string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "turn --agent ID [--wait 8s]",
		Short: "Tell the daemon a turn ended (commit pending writes, push) and print the outcome",
		Long:  "Tell the daemon a turn ended and print the outcome JSON. Exit 0 unless the daemon is unreachable.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			c := g.agentClient(id, wait+5*time.Second)
			var res json.RawMessage
			code, err := c.do("POST", "/v1/agents/"+id+"/turn?wait="+url.QueryEscape(wait.String()), nil, &res)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(res))
			if code >= 400 {
				// The answer (printed) says what went wrong; the exit code is
				// reserved for an unreachable daemon (SPEC §5).
				fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: turn %s: daemon answered %d\n", id, code)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().DurationVar(&wait, "wait", daemon.DefaultTurnWait, "how long to wait for the push (env MEMFSD_WAIT)")
	return cmd
}
