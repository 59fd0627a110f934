package history

// TreeReads walks path's whole history from rd's head, as Log does with
// no limit, and returns the trees it read and the commits it walked.
func TreeReads(rd Reader, path string) (reads, commits int, err error) {
	head, err := rd.Head()
	if err != nil {
		return 0, 0, err
	}
	rd.Locked(func() {
		w := newWalk(rd, path)
		if err = w.push(head); err != nil {
			return
		}
		for w.queue.Len() > 0 {
			if _, err = w.step(); err != nil {
				return
			}
			commits++
		}
		reads = w.reads
	})
	return reads, commits, err
}
