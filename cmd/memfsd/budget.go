package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
)

func newBudgetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "The pinned memory's token budget (default 20,000, estimated as letta-code does)",
	}
	var id string
	var tokens int
	set := &cobra.Command{
		Use:   "set --agent ID --tokens N",
		Short: "Operator: set the agent's budget (0 drops the setting: system/.letta-policy.yml's or the default applies)",
		Long: "Sets the agent's pinned-memory budget on the admin socket when a daemon runs, else in\n" +
			"memfsd's records directly. It wins over system/.letta-policy.yml's token_budget.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			c := g.adminClient(0)
			var b agent.Budget
			var fail struct {
				Error string `json:"error"`
			}
			var raw json.RawMessage
			code, err := c.do("PUT", "/v1/agents/"+id+"/budget", strings.NewReader(fmt.Sprintf(`{"tokens": %d}`, tokens)), &raw)
			var unreachable errUnreachable
			switch {
			case err == nil && code == 200:
				json.Unmarshal(raw, &b)
				printBudget(cmd.OutOrStdout(), b)
				return nil
			case err == nil && code != 404:
				json.Unmarshal(raw, &fail)
				return fmt.Errorf("budget set: daemon answered %d: %s", code, fail.Error)
			case err != nil && !errors.As(err, &unreachable):
				return err
			}
			cfg, err := g.config()
			if err != nil {
				return err
			}
			if err := agent.SetBudgetOnDisk(cfg, id, tokens); err != nil {
				return err
			}
			if b, err = agent.ReadBudget(cfg, id); err != nil {
				return err
			}
			printBudget(cmd.OutOrStdout(), b)
			return nil
		},
	}
	set.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	set.Flags().IntVar(&tokens, "tokens", 0, "the budget in tokens; 0 drops the setting (env MEMFSD_TOKENS)")
	show := &cobra.Command{
		Use:   "show --agent ID",
		Short: "The pinned memory's tokens, budget and largest files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			var b agent.Budget
			code, err := g.agentClient(id, 0).do("GET", "/v1/agents/"+id+"/budget", nil, &b)
			var unreachable errUnreachable
			switch {
			case errors.As(err, &unreachable) || (err == nil && code == 404):
				cfg, err := g.config()
				if err != nil {
					return err
				}
				if b, err = agent.ReadBudget(cfg, id); err != nil {
					return err
				}
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("budget show %s: daemon answered %d", id, code)
			}
			printBudget(cmd.OutOrStdout(), b)
			return nil
		},
	}
	show.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.AddCommand(set, show)
	return cmd
}

func printBudget(w io.Writer, b agent.Budget) {
	state := "within budget"
	if b.Over() {
		state = "OVER BUDGET"
	}
	fmt.Fprintf(w, "pinned memory: %d tokens of %d (%s, budget from %s, layout %s)\n", b.Tokens, b.Limit, state, b.Source, b.Layout)
	for _, f := range b.Files {
		fmt.Fprintf(w, "%8d  %s\n", f.Tokens, f.Path)
	}
	if b.Warning != "" {
		fmt.Fprintln(w, "warning:", b.Warning)
	}
}
