package config

import (
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/memfsd/memfsd/embedded"
)

// Where a home keeps its shared repositories and the agents' views of
// them, and where letta-code's layout puts a shared repository's remote.

// SharedDir is where the one clone of shared repository name lives in
// this home: <home>/shared/<name> (its work tree is memory/ below it).
func (c *Config) SharedDir(name string) string {
	return filepath.Join(c.Home, "shared", name)
}

// ViewDir is agent id's view of shared repository name:
// <home>/agents/<id>/shared/<name>, a plain folder (no .git) the agent may
// read and write; memfsd copies the shared tip into it and takes the
// agent's changes from it.
func (c *Config) ViewDir(id, name string) string {
	return filepath.Join(c.Home, "agents", id, "shared", name)
}

// DefaultSharedURL is letta-code's URL of agent id's repository name:
// <base>/v1/git/<id>/repositories/<name>.git (the embedded default under
// <home>/remote likewise). A --remote-template has no place for a
// repository name: then the operator gives the URL.
func (c *Config) DefaultSharedURL(id, name string) (string, error) {
	switch {
	case c.RemoteTemplate != "":
		return "", fmt.Errorf("shared %s: memfsd runs with --remote-template, which names one repository per agent: give the shared repository's URL (remote_url, or --remote)", name)
	case c.BaseURL == "":
		return embedded.URL(filepath.Join(c.Home, "remote", "v1", "git", id, "repositories", name+".git")), nil
	}
	return c.BaseURL + "/v1/git/" + id + "/repositories/" + url.PathEscape(name) + ".git", nil
}
