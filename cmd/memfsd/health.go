package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newHealthCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 when the daemon is ready (GET /healthz answers 200): a probe for Kubernetes or systemd",
		Long: "Asks the daemon on --listen for /healthz and prints the answer. Exit 0 when it is 200\n" +
			"(every agent has a usable work tree, even with the remote down); 1 when it is not\n" +
			"ready yet or does not answer within --timeout.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return fmt.Errorf("flag --timeout: must be positive, got %s", timeout)
			}
			c := g.client(g.listenAddr(g.homeDir()), timeout)
			var res json.RawMessage
			code, err := c.do("GET", "/healthz", nil, &res)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: health: %v\n", err)
				return exitCode(1)
			}
			printRawJSON(cmd.OutOrStdout(), res)
			if code != 200 {
				fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: health: not ready (%d)\n", code)
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer (env MEMFSD_TIMEOUT)")
	return cmd
}
