package gitmem

// HistoryTreeReads walks path's whole history from HEAD, as History does
// with no limit, and returns the trees it read and the commits it walked.
func HistoryTreeReads(r *Repo, path string) (reads, commits int, err error) {
	head, err := r.Head()
	if err != nil {
		return 0, 0, err
	}
	r.mu.Lock()
	defer r.unlock()
	w := newHistoryWalk(r, path)
	if err := w.push(head); err != nil {
		return 0, 0, err
	}
	for w.queue.Len() > 0 {
		if _, err := w.step(); err != nil {
			return 0, 0, err
		}
		commits++
	}
	return w.reads, commits, nil
}
