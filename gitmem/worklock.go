package gitmem

// lockWork begins a section under r.mu that may rewrite work files (a
// fast-forward, a replay or restore, the outgoing check putting a
// read-only block back), taking opts.WorkLock first. A writer that reads
// a file and writes it back under WorkLock (the memory tool) then never
// writes its old view over what the section put there: a pull waits for
// the call, or the call reads what the pull wrote.
func (r *Repo) lockWork() {
	if r.opts.WorkLock != nil {
		r.opts.WorkLock.Lock()
	}
	r.mu.Lock()
}

// unlockWork ends a section begun by lockWork.
func (r *Repo) unlockWork() {
	r.unlock()
	if r.opts.WorkLock != nil {
		r.opts.WorkLock.Unlock()
	}
}
