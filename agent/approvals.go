package agent

import (
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/blockset"
	"github.com/memfsd/memfsd/gitmem"
)

// blocksFile, beside operatorFile and as far out of the agent's reach,
// holds the operator's block-set approvals (SPEC §8: bound to the remote
// tip they were made against, ended when their content is on the remote
// or superseded there).
const blocksFile = "operator-blocks.json"

// BlockSetOutcome is what became of the latest block set of a path
// (blockset.Outcome).
type BlockSetOutcome = blockset.Outcome

func (a *Agent) blocksPath() string {
	return filepath.Join(a.folder, blocksFile)
}

// approveBlock records that the operator set rel to content against the
// remote tip base (blockset.Book.Approve).
func (a *Agent) approveBlock(rel string, content []byte, base, prev plumbing.Hash) error {
	return a.blockSets.Approve(a.blocksPath(), rel, content, base, prev)
}

// liveBlockApprovals returns, for a push starting at remote, the blob id
// each path's approval lets through, ending those that ended
// (blockset.Book.Live).
func (a *Agent) liveBlockApprovals(remote gitmem.OutgoingRemote) (map[string]string, error) {
	return a.blockSets.Live(a.blocksPath(), remote, a.log)
}

// BlockSetOutcome reports what became of the latest block set of rel that
// this process made or saw end: pending, delivered or superseded (with the
// reason). A path with an approval on record is pending.
func (a *Agent) BlockSetOutcome(rel string) BlockSetOutcome {
	var remoteFile func(string) ([]byte, bool, error)
	if repo := a.repository(); repo != nil {
		remoteFile = repo.RemoteFile
	}
	return a.blockSets.Outcome(a.blocksPath(), rel, remoteFile)
}
