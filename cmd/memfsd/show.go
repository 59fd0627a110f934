package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
)

func newShowCmd(g *globals) *cobra.Command {
	var id, path, rev string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show --agent ID --path P [--rev R] [--json]",
		Short: "A memory file as it was at a revision (like git show R:P, no git binary needed)",
		Long: "Prints --path (relative to the memory folder) as it was at --rev: a commit id (full or\n" +
			"at least 4 digits), HEAD, HEAD~N, a branch (main, origin/main) or a backup ref\n" +
			"(refs/memfsd/backup/<n>); default HEAD. From the daemon when one runs, else from disk.\n" +
			"Exit 1 when the file is not there at that revision or the revision is unknown.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			if path == "" {
				return errors.New("flag --path: required (a file relative to the memory folder, e.g. system/human.md)")
			}
			q := url.Values{"path": {path}}
			if rev != "" {
				q.Set("rev", rev)
			}
			var raw json.RawMessage
			code, err := g.agentClient(id, 0).do("GET", "/v1/agents/"+id+"/file?"+q.Encode(), nil, &raw)
			var answer struct {
				agent.FileAtRef
				Error string `json:"error"`
			}
			if err == nil {
				json.Unmarshal(raw, &answer)
			}
			var f agent.FileAtRef
			var unreachable errUnreachable
			switch {
			// A 404 without file_path is the daemon not managing the
			// agent (one with it: the file is not at that revision).
			case errors.As(err, &unreachable) || (err == nil && code == 404 && answer.FilePath == ""):
				cfg, err := g.config()
				if err != nil {
					return err
				}
				if f, err = agent.ReadFileAt(cfg, id, path, rev); err != nil {
					return fmt.Errorf("show %s: %w", id, err)
				}
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("show %s: %s", id, answer.Error)
			default:
				f = answer.FileAtRef
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, f)
			}
			data := []byte(f.Content)
			if f.Encoding == "base64" {
				if data, err = base64.StdEncoding.DecodeString(f.Content); err != nil {
					return fmt.Errorf("show %s: decode the content: %w", id, err)
				}
			}
			_, err = out.Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().StringVar(&path, "path", "", "the file, relative to the memory folder (env MEMFSD_PATH)")
	cmd.Flags().StringVar(&rev, "rev", "", "revision: commit id, HEAD~N, branch or ref; default HEAD (env MEMFSD_REV)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON answer (env MEMFSD_JSON)")
	return cmd
}
