package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// managedFile marks an agent the operator added at runtime (PUT
// /v1/agents/{id}): `memfsd run` on the same home manages it again at
// start. Removing the file stops that.
const managedFile = "managed"

// RecordManaged records that id was added at runtime, so a restart
// manages it again.
func RecordManaged(cfg *Config, id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if err := cfg.EnsurePrivateDirs(id); err != nil {
		return err
	}
	return writeRecord(filepath.Join(cfg.Home, "agents", id, managedFile), []byte("added with PUT /v1/agents/"+id+"\n"))
}

// RecordedAgents lists the agents added at runtime on cfg's home, sorted.
func RecordedAgents(cfg *Config) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(cfg.Home, "agents"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || ValidateID(e.Name()) != nil {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(cfg.Home, "agents", e.Name(), managedFile)); err == nil && fi.Mode().IsRegular() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}
