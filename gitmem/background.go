package gitmem

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed: the repository was closed; nothing more runs on it.
var ErrClosed = errors.New("repository closed")

// background is the long work a Repo runs beside its callers (a repack and
// the goroutines it starts), which Close cancels and waits for: none of it
// may outlive the Repo, its files open in .git.
type background struct {
	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
	closing context.Context
	close   context.CancelFunc
}

func newBackground() *background {
	b := &background{}
	b.closing, b.close = context.WithCancel(context.Background())
	return b
}

// start registers one piece of work: ctx is also cancelled by Close, and
// done (once, when the work has ended) lets Close return. ErrClosed once
// Close has begun.
func (b *background) start(ctx context.Context) (context.Context, func(), error) {
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

// stop cancels the work started and waits until all of it has ended.
func (b *background) stop() {
	b.mu.Lock()
	b.closed = true
	b.close()
	b.mu.Unlock()
	b.wg.Wait()
}
