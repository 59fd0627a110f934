package agent

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitmem"
)

// HeadFile is one file of the agent's HEAD: its path in the memory folder
// and its blob id (what changed when the id did).
type HeadFile struct {
	Path string
	Blob string
	Link bool
}

// Files lists HEAD's files, sorted by path, with HEAD's commit id ("" when
// the branch is unborn). A reader outside the pipeline (the MCP server's
// resources) sees what is committed, never a write half done. Bounded by
// AnswerDeadline (ErrStuck past it), as History is.
func (a *Agent) Files() (string, []HeadFile, error) {
	repo := a.repository()
	if repo == nil {
		return "", nil, ErrNotReady
	}
	type headFiles struct {
		head  plumbing.Hash
		files []gitmem.FileEntry
	}
	hf, err := boundedRead(a, "files", func() (headFiles, error) {
		h, fs, err := repo.HeadFiles()
		return headFiles{h, fs}, err
	})
	head, files := hf.head, hf.files
	if err != nil {
		return "", nil, fmt.Errorf("files %s: %w", a.ID, err)
	}
	out := make([]HeadFile, len(files))
	for i, f := range files {
		out[i] = HeadFile{Path: f.Path, Blob: f.Blob.String(), Link: f.Mode == filemode.Symlink}
	}
	return hashString(head), out, nil
}
