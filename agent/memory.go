package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
)

// MemoryTool is the memory tool over this agent's folder: each successful
// write is one commit. mu serialises it with other writers (the daemon's
// watcher); nil gives it its own.
func (a *Agent) MemoryTool(mu sync.Locker) *memtool.Tool {
	var secrets []memtool.SecretPattern
	if !a.cfg.NoSecretGuard {
		secrets = a.cfg.SecretPatterns
	}
	return &memtool.Tool{
		Dir:     a.Repo.Dir,
		Secrets: secrets,
		Mu:      mu,
		Commit: func(paths []string, message string) error {
			_, err := a.Repo.CommitWrite(paths, message)
			if errors.Is(err, gitmem.ErrNothingToCommit) {
				return nil
			}
			return err
		},
	}
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
	abs := filepath.Join(a.Repo.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	tmp := abs + ".memfsd-set"
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	_, err := a.Repo.CommitWrite([]string{rel}, "memfsd: operator set "+rel)
	if err != nil && !errors.Is(err, gitmem.ErrNothingToCommit) {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	return rel, nil
}

// GuardDirectWrite undoes a direct work-tree write the agent may not make
// (a read-only block, or a change of read_only in front matter): the
// committed version is put back and the rejected bytes are kept under
// .git/memfsd/rejected/. It reports whether the write was undone.
func (a *Agent) GuardDirectWrite(rel string) (bool, error) {
	if !blocks.MayBeReadOnly(rel) {
		return false, nil
	}
	head, inHead, err := a.Repo.HeadFile(rel)
	if err != nil {
		return false, err
	}
	abs := filepath.Join(a.Repo.Dir, filepath.FromSlash(rel))
	work, err := os.ReadFile(abs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	var old []byte
	if inHead {
		old = head
		if old == nil {
			old = []byte{}
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		work = nil
	} else if work == nil {
		work = []byte{}
	}
	if blocks.CheckAgentWrite(rel, old, work) == nil {
		return false, nil
	}
	if work != nil {
		dir := filepath.Join(a.Repo.GitDir, "memfsd", "rejected")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, err
		}
		name := fmt.Sprintf("%d-%s", time.Now().UnixNano(), strings.ReplaceAll(rel, "/", "%"))
		if err := os.WriteFile(filepath.Join(dir, name), work, 0o600); err != nil {
			return false, err
		}
	}
	if inHead {
		tmp := abs + ".memfsd-restore"
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return false, err
		}
		if err := os.WriteFile(tmp, old, 0o600); err != nil {
			return false, err
		}
		if err := os.Rename(tmp, abs); err != nil {
			return false, err
		}
	} else if err := os.Remove(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	a.log.Warn("undid a direct write to a read-only block; rejected bytes kept", "path", rel)
	return true, nil
}
