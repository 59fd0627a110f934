package memsearch

import (
	"fmt"
	"strings"

	"github.com/memfsd/memfsd/search"
)

// Text renders a search's hits for a person or a model: per hit its
// score, /memories path and L0, the folders it was found through with
// their scores, and the matched lines numbered as the memory tool's view
// numbers them.
func Text(res Result) string {
	if len(res.Hits) == 0 {
		return "No memory file matches; try other words, or view /memories to browse.\n"
	}
	var b strings.Builder
	for _, h := range res.Hits {
		fmt.Fprintf(&b, "%.3f  /memories/%s  %s\n", h.Score, h.Path, h.L0)
		var trail []string
		for _, s := range h.Trail {
			trail = append(trail, fmt.Sprintf("%s/ %.3f", s.Folder, s.Score))
		}
		if len(trail) > 0 {
			fmt.Fprintf(&b, "       via %s\n", strings.Join(trail, " > "))
		}
		for _, l := range h.Lines {
			fmt.Fprintf(&b, "%6d\t%s\n", l.Line, l.Text)
		}
	}
	return b.String()
}

// OverviewText renders an overview in memfsd's context format: the
// folder's /memories path and counts, then one line per child with its L0.
func OverviewText(o search.Overview) string {
	o.Folder = strings.TrimSuffix("memories/"+o.Folder, "/")
	return o.Text()
}
