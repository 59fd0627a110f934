package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/search"
)

func newSearchCmd(g *globals) *cobra.Command {
	var id, folder string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search --agent ID [--limit N] [--json] QUERY | search --agent ID --folder PATH",
		Short: "Search an agent's memory by words, descending folders by their overviews",
		Long: "Finds the files best matching QUERY (BM25 over names, descriptions and content; folders\n" +
			"scored by their overviews of children's names and descriptions), best first, each with\n" +
			"its trail of folders and their scores and the lines that matched. --limit 1 to 100,\n" +
			"default 10. --folder PATH prints a folder's overview (each child with its description)\n" +
			"instead. From the daemon when one runs, else from disk. --json prints the API's answer.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			if limit < 1 || limit > search.MaxLimit {
				return fmt.Errorf("flag --limit: %d: want 1 to %d", limit, search.MaxLimit)
			}
			route, q := "search", url.Values{"q": {strings.Join(args, " ")}, "limit": {strconv.Itoa(limit)}}
			if cmd.Flags().Changed("folder") {
				if len(args) > 0 {
					return errors.New("search: give a QUERY or --folder, not both")
				}
				route, q = "overview", url.Values{"path": {folder}}
			}
			var raw json.RawMessage
			var fail struct {
				Error string `json:"error"`
			}
			code, err := g.agentClient(id, 0).do("GET", "/v1/agents/"+id+"/"+route+"?"+q.Encode(), nil, &raw)
			var unreachable errUnreachable
			switch {
			case errors.As(err, &unreachable) || (err == nil && code == 404):
				if raw, err = searchFromDisk(g, id, route, q); err != nil {
					return err
				}
			case err != nil:
				return err
			case code != 200:
				json.Unmarshal(raw, &fail)
				return fmt.Errorf("search %s: daemon answered %d: %s", id, code, fail.Error)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printRawJSON(out, raw)
			}
			if route == "overview" {
				var o struct{ Text string }
				if err := json.Unmarshal(raw, &o); err != nil {
					return fmt.Errorf("search %s: decode the answer: %w", id, err)
				}
				fmt.Fprint(out, o.Text)
				return nil
			}
			var res agent.SearchResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("search %s: decode the answer: %w", id, err)
			}
			fmt.Fprint(out, agent.SearchText(res))
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().IntVar(&limit, "limit", search.DefaultLimit, "most hits, 1 to 100 (env MEMFSD_LIMIT)")
	cmd.Flags().StringVar(&folder, "folder", "", "print this folder's overview instead of searching (env MEMFSD_FOLDER)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON answer (env MEMFSD_JSON)")
	return cmd
}

// searchFromDisk answers as the daemon would, from the repository on disk.
func searchFromDisk(g *globals, id, route string, q url.Values) (json.RawMessage, error) {
	cfg, err := g.config()
	if err != nil {
		return nil, err
	}
	var v any
	if route == "overview" {
		o, err := agent.ReadOverview(cfg, id, q.Get("path"))
		if err != nil {
			return nil, fmt.Errorf("search %s: %w", id, err)
		}
		v = map[string]any{"overview": o, "text": agent.OverviewText(o)}
	} else {
		limit, _ := strconv.Atoi(q.Get("limit"))
		if v, err = agent.ReadSearch(cfg, id, q.Get("q"), limit); err != nil {
			return nil, fmt.Errorf("search %s: %w", id, err)
		}
	}
	return json.Marshal(v)
}
