package search

import (
	"container/list"
	"sync"
)

// DefaultPoolBytes is the memory a Pool lets its indexes hold together.
const DefaultPoolBytes = 256 << 20

// Pool bounds the memory of many indexes (one per agent): when their
// estimated sizes pass MaxBytes, the least recently used are forgotten and
// rebuilt on their next use. Safe for concurrent use.
type Pool struct {
	MaxBytes int

	mu    sync.Mutex
	lru   *list.List // of *poolEntry, most recent first
	byKey map[any]*list.Element
	total int
}

type poolEntry struct {
	key   any
	bytes int
}

// NewPool makes a pool holding at most maxBytes (0: DefaultPoolBytes).
func NewPool(maxBytes int) *Pool {
	if maxBytes <= 0 {
		maxBytes = DefaultPoolBytes
	}
	return &Pool{MaxBytes: maxBytes, lru: list.New(), byKey: map[any]*list.Element{}}
}

// Use records that key's index is in use and now holds bytes; it returns
// the keys whose indexes their owners must drop to stay within MaxBytes
// (never key itself).
func (p *Pool) Use(key any, bytes int) (evict []any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.byKey[key]; ok {
		e := el.Value.(*poolEntry)
		p.total += bytes - e.bytes
		e.bytes = bytes
		p.lru.MoveToFront(el)
	} else {
		p.byKey[key] = p.lru.PushFront(&poolEntry{key: key, bytes: bytes})
		p.total += bytes
	}
	for p.total > p.MaxBytes && p.lru.Len() > 1 {
		el := p.lru.Back()
		e := el.Value.(*poolEntry)
		p.lru.Remove(el)
		delete(p.byKey, e.key)
		p.total -= e.bytes
		evict = append(evict, e.key)
	}
	return evict
}

// Forget removes key (its owner dropped its index).
func (p *Pool) Forget(key any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.byKey[key]; ok {
		p.total -= el.Value.(*poolEntry).bytes
		p.lru.Remove(el)
		delete(p.byKey, key)
	}
}

// Bytes is the memory the pool's indexes hold together (estimated).
func (p *Pool) Bytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}
