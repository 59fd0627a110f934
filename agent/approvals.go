package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitmem"
)

// blocksFile, beside operatorFile and as far out of the agent's reach,
// holds the operator's block-set approvals (SPEC §8: bound to the remote
// tip they were made against, ended when their content is on the remote
// or superseded there).
const blocksFile = "operator-blocks.json"

// blockApproval is one `block set`: the operator set Path to Blob (a
// regular file) while the remote, as memfsd last knew it, was at Base.
// It lets Blob through the outgoing check only for a push whose remote
// tip is Base, or a descendant on which nobody changed Path since.
type blockApproval struct {
	Path string `json:"path"`
	Blob string `json:"blob"`
	Base string `json:"base"`
}

func (a *Agent) blocksPath() string {
	return filepath.Join(a.folder, blocksFile)
}

// readBlockApprovals reads the record (none when absent or unreadable:
// an approval that cannot be read lets nothing through).
func (a *Agent) readBlockApprovals() []blockApproval {
	var out []blockApproval
	if data, err := os.ReadFile(a.blocksPath()); err == nil {
		_ = json.Unmarshal(data, &out)
	}
	return out
}

func (a *Agent) writeBlockApprovals(aps []blockApproval) error {
	p := a.blocksPath()
	if len(aps) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record block approvals: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(aps)
	if err := writeRecord(p, data); err != nil {
		return fmt.Errorf("record block approvals: %w", err)
	}
	return nil
}

// approveBlock records that the operator set rel to content against the
// remote tip base; it replaces an earlier approval of rel (the latest
// block set only: the agent cannot bring back an older one).
func (a *Agent) approveBlock(rel string, content []byte, base plumbing.Hash) error {
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	aps := slices.DeleteFunc(a.readBlockApprovals(), func(x blockApproval) bool { return x.Path == rel })
	aps = append(aps, blockApproval{
		Path: rel,
		Blob: plumbing.ComputeHash(plumbing.BlobObject, content).String(),
		Base: base.String(),
	})
	if err := a.writeBlockApprovals(aps); err != nil {
		return fmt.Errorf("record operator change of %s: %w", rel, err)
	}
	return nil
}

// liveBlockApprovals returns, for a push starting at remote, the blob id
// each path's approval lets through, and removes from the record the
// approvals that ended: delivered (the remote has the content) or
// superseded (the path changed on the remote since the approval's tip, or
// that tip is not in the remote's history any more).
func (a *Agent) liveBlockApprovals(remote gitmem.OutgoingRemote) (map[string]string, error) {
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	aps := a.readBlockApprovals()
	if len(aps) == 0 {
		return nil, nil
	}
	live := map[string]string{}
	kept := aps[:0:0]
	for _, ap := range aps {
		id, mode, err := remote.Entry(ap.Path)
		if err != nil {
			return nil, err
		}
		if id.String() == ap.Blob && mode == filemode.Regular {
			a.log.Info("operator's block set is on the remote: approval ended", "path", ap.Path)
			continue
		}
		ok, err := remote.Unchanged(plumbing.NewHash(ap.Base), ap.Path)
		if err != nil {
			return nil, err
		}
		if !ok {
			a.log.Warn("operator's block set was superseded on the remote: approval ended", "path", ap.Path, "approved_at", ap.Base, "remote", remote.Tip.String())
			continue
		}
		live[ap.Path] = ap.Blob
		kept = append(kept, ap)
	}
	if len(kept) != len(aps) {
		if err := a.writeBlockApprovals(kept); err != nil {
			return nil, err
		}
	}
	return live, nil
}
