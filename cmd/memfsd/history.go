package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
)

func newHistoryCmd(g *globals) *cobra.Command {
	var id, path string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history --agent ID [--path P] [--limit N] [--json]",
		Short: "The commits that changed a memory path, newest first (no git binary needed)",
		Long: "Lists the commits that changed --path (a file or a folder, relative to the memory folder;\n" +
			"empty for every commit), newest first, as `git log -- P` does: id, author date, author,\n" +
			"subject, then the files each changed. --limit 1 to 200, default 20. From the daemon when\n" +
			"one runs, else from disk. --json prints the API's answer.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			if limit < 1 || limit > agent.MaxHistoryLimit {
				return fmt.Errorf("flag --limit: %d: want 1 to %d", limit, agent.MaxHistoryLimit)
			}
			q := url.Values{"path": {path}, "limit": {strconv.Itoa(limit)}}
			var h agent.History
			var fail struct {
				Error string `json:"error"`
			}
			var raw json.RawMessage
			code, err := g.agentClient(id, 0).do("GET", "/v1/agents/"+id+"/history?"+q.Encode(), nil, &raw)
			var unreachable errUnreachable
			switch {
			case errors.As(err, &unreachable) || (err == nil && code == 404):
				cfg, err := g.config()
				if err != nil {
					return err
				}
				if h, err = agent.ReadHistory(cfg, id, path, limit); err != nil {
					return fmt.Errorf("history %s: %w", id, err)
				}
			case err != nil:
				return err
			case code != 200:
				json.Unmarshal(raw, &fail)
				return fmt.Errorf("history %s: daemon answered %d: %s", id, code, fail.Error)
			default:
				if err := json.Unmarshal(raw, &h); err != nil {
					return fmt.Errorf("history %s: decode the daemon's answer: %w", id, err)
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, h)
			}
			for _, c := range h.Commits {
				when := c.Timestamp
				if t, err := time.Parse(time.RFC3339, c.Timestamp); err == nil {
					when = t.Format("2006-01-02 15:04:05 -0700")
				}
				fmt.Fprintf(out, "%s %s %s  %s\n", c.SHA[:12], when, c.AuthorName, c.Message)
				for _, ch := range c.Changes {
					fmt.Fprintf(out, "    %-6s %s\n", ch.Kind, ch.Path)
				}
				if c.MoreChanges > 0 {
					fmt.Fprintf(out, "    ... and %d more files\n", c.MoreChanges)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().StringVar(&path, "path", "", "a file or folder relative to the memory folder; empty for every commit (env MEMFSD_PATH)")
	cmd.Flags().IntVar(&limit, "limit", agent.DefaultHistoryLimit, "most commits listed, 1 to 200 (env MEMFSD_LIMIT)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON answer (env MEMFSD_JSON)")
	return cmd
}
