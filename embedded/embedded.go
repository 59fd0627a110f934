// Package embedded is memfsd's in-process remote: bare repositories on
// local disk, served through go-git's server with git's ref locks, git's
// way of storing a pushed pack, and fetches read again when a gc beside
// them removes a pack (docs/engine.md, "The embedded remote"). It knows the
// object store and git's formats, nothing of a work tree or a repository.
package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"

	"github.com/memfsd/memfsd/gitstore"
)

// Scheme is the URL scheme of the in-process remote: bare
// repositories on local disk served with no server and no git binary.
const Scheme = "memfsd"

// go-git keeps its transports in a plain map that every fetch and push
// reads, so memfsd writes it once, at package init, before any goroutine
// can read it: installing the embedded transport on first use raced with
// another agent's fetch (go test -race, TestReconcile_*), and so would an
// embedded agent added at run time beside agents that sync over HTTP.
func init() {
	client.InstallProtocol(Scheme, &embeddedTransport{
		inner: server.NewClient(embeddedLoader{}),
	})
}

// URL is the URL of a bare repository at the absolute path dir,
// served in-process.
func URL(dir string) string {
	return Scheme + "://" + filepath.ToSlash(dir)
}

// embeddedTransport is go-git's in-process server with the checks it lacks:
// bare repositories are created on first use, and a push moves refs by
// git's lock protocol with a check of the old value (the stock server
// rewrites the ref file in place, blindly: see casReceivePack).
type embeddedTransport struct {
	inner transport.Transport
}

var embeddedLocks sync.Map // repo path → *sync.Mutex

func (t *embeddedTransport) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	if err := initBare(ep.Path); err != nil {
		return nil, err
	}
	s, err := t.inner.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	fresh := func() (transport.UploadPackSession, error) { return t.inner.NewUploadPackSession(ep, auth) }
	return &rereadUploadPack{UploadPackSession: s, dir: ep.Path, fresh: fresh}, nil
}

func (t *embeddedTransport) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	if err := initBare(ep.Path); err != nil {
		return nil, err
	}
	s, err := t.inner.NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	mu, _ := embeddedLocks.LoadOrStore(ep.Path, &sync.Mutex{})
	return &casReceivePack{ReceivePackSession: s, dir: ep.Path, mu: mu.(*sync.Mutex)}, nil
}

// initBare creates a bare repository with HEAD on main unless one exists.
func initBare(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return fmt.Errorf("create embedded remote %s: %w", dir, err)
		}
	}
	files := map[string]string{
		"config": "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
		"HEAD":   "ref: refs/heads/" + gitstore.DefaultBranch + "\n",
	}
	for _, name := range []string{"config", "HEAD"} { // HEAD last: it marks a whole repo
		if err := os.WriteFile(filepath.Join(dir, name), []byte(files[name]), 0o600); err != nil {
			return fmt.Errorf("create embedded remote %s: %w", dir, err)
		}
	}
	return nil
}
