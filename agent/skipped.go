package agent

import (
	"maps"
	"slices"
	"strings"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/reminders"
)

// noteSkipped records untrackable paths the scan or the pipeline left out
// and logs the ones not recorded before. A complete list (a full scan)
// replaces the record; a partial one (the pipeline's) adds to it. Paths
// no longer in the work tree drop out either way.
func (a *Agent) noteSkipped(found []gitmem.SkippedPath, complete bool) {
	a.skipMu.Lock()
	defer a.skipMu.Unlock()
	old := a.readSkipped()
	next := map[string]string{}
	if !complete {
		maps.Copy(next, old)
	}
	for _, s := range found {
		next[s.Path] = s.Reason
	}
	for p := range next {
		if !a.workExists(p) {
			delete(next, p) // gone: nothing left to skip
		}
	}
	for _, p := range slices.Sorted(maps.Keys(next)) {
		if _, ok := old[p]; !ok {
			a.log.Warn("not committed: the path cannot be tracked by git; the other files are committed as usual", "path", p, "reason", next[p])
		}
	}
	if maps.Equal(old, next) {
		return
	}
	if err := a.writeSkipped(next); err != nil {
		a.log.Warn("recording skipped paths failed; they are found again at the next scan", "err", err)
	}
}

// pathsSkipped is the record narrowed to paths still in the work tree.
func (a *Agent) pathsSkipped() []reminders.PathSkip {
	var out []reminders.PathSkip
	for p, why := range a.readSkipped() {
		if a.workExists(p) {
			out = append(out, reminders.PathSkip{Path: p, Reason: why})
		}
	}
	slices.SortFunc(out, func(x, y reminders.PathSkip) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// skippedFromScan turns a scan's skipped paths into the status form.
func skippedFromScan(found []gitmem.SkippedPath) []reminders.PathSkip {
	out := make([]reminders.PathSkip, 0, len(found))
	for _, s := range found {
		out = append(out, reminders.PathSkip{Path: s.Path, Reason: s.Reason})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (a *Agent) readSkipped() map[string]string { return a.recordBook().Skipped() }

func (a *Agent) writeSkipped(rec map[string]string) error { return a.recordBook().WriteSkipped(rec) }
