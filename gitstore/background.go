package gitstore

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed: the repository was closed; nothing more runs on it (see
// Background.Start).
var ErrClosed = errors.New("repository closed")

// Background is the long work a repository runs beside its callers (a
// repack and the goroutines it starts), which its Close cancels and waits
// for (Stop): none of it may outlive the repository, its files open in .git.
type Background struct {
	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
	closing context.Context
	close   context.CancelFunc
}

// NewBackground is a Background with nothing started.
func NewBackground() *Background {
	b := &Background{}
	b.closing, b.close = context.WithCancel(context.Background())
	return b
}

// Start registers one piece of work: ctx is also cancelled by Stop, and
// done (once, when the work has ended) lets Stop return. ErrClosed once
// Stop has begun.
func (b *Background) Start(ctx context.Context) (context.Context, func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, nil, ErrClosed
	}
	b.wg.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(b.closing, cancel)
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			stop()
			cancel()
			b.wg.Done()
		})
	}, nil
}

// Stop cancels the work started and waits until all of it has ended.
func (b *Background) Stop() {
	b.mu.Lock()
	b.closed = true
	b.close()
	b.mu.Unlock()
	b.wg.Wait()
}
