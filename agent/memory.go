package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/atomicfile"
	"github.com/memfsd/memfsd/memtool"
)

// ErrNotReady is returned while the agent has no usable work tree yet.
var ErrNotReady = errors.New("memory is not available yet: the agent's first clone has not succeeded")

// MemoryTool is the memory tool over this agent's folder: each successful
// write is one commit, serialised with the pipeline's commits.
func (a *Agent) MemoryTool() (*memtool.Tool, error) {
	repo := a.repository()
	if repo == nil {
		return nil, ErrNotReady
	}
	var secrets []memtool.SecretPattern
	if !a.cfg.NoSecretGuard {
		secrets = a.cfg.SecretPatterns
	}
	return &memtool.Tool{
		Dir:     a.Dir(),
		Secrets: secrets,
		Mu:      &a.writeMu,
		Commit: func(paths []string, message string) error {
			_, err := repo.CommitWrite(paths, message)
			if errors.Is(err, gitmem.ErrNothingToCommit) {
				return nil
			}
			return err
		},
	}, nil
}

// SetBlock is the operator's way to change a read-only block: it writes
// content to the block and commits it (the push follows at the next sync).
func (a *Agent) SetBlock(name string, content []byte) (string, error) {
	var rel string
	switch name {
	case "persona":
		rel = blocks.PersonaPath
	case "human":
		rel = blocks.HumanPath
	default:
		return "", fmt.Errorf("block set: %q is not a block: want persona or human", name)
	}
	repo := a.repository()
	if repo == nil {
		return "", fmt.Errorf("block set %s: %w", name, ErrNotReady)
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	abs := filepath.Join(a.Dir(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	if err := atomicfile.Write(abs, content, 0o600, !a.cfg.NoFsync); err != nil {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	// Recorded before the commit: a push racing it must already know.
	if err := a.approve(rel, plumbing.ComputeHash(plumbing.BlobObject, content).String()); err != nil {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	_, err := repo.CommitWrite([]string{rel}, "memfsd: operator set "+rel)
	if err != nil && !errors.Is(err, gitmem.ErrNothingToCommit) {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	return rel, nil
}
