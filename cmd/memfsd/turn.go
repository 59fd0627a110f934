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
		Long:  "Tell the daemon a turn ended and print the outcome JSON. Exit 0 when the daemon answered the turn (whatever its outcome); 1 when it is unreachable or answers an error (an unknown agent).",
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
			printRawJSON(cmd.OutOrStdout(), res)
			if code >= 400 {
				// The answer (printed) says what went wrong; a script sees
				// it in the exit code too (issue 28).
				var e struct {
					Error string `json:"error"`
				}
				json.Unmarshal(res, &e)
				return fmt.Errorf("turn --agent %s: daemon answered %d: %s", id, code, e.Error)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().DurationVar(&wait, "wait", daemon.DefaultTurnWait, "how long to wait for the push (env MEMFSD_WAIT)")
	return cmd
}
