package shared

import (
	"fmt"
	"os"
	"testing"

	"github.com/memfsd/memfsd/agent"
)

// TestProposals_TrimKeepsUnpushed: the record keeps proposalsKept pushed
// proposals and every one not pushed yet, however many came after it
// (issue 27: one agent's 200 pushed proposals trimmed another's
// unpushed one out of the record, and it was never pushed).
func TestProposals_TrimKeepsUnpushed(t *testing.T) {
	t.Parallel()
	a, err := New(&agent.Config{Home: t.TempDir()}, "team", "")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(a.Dir(), 0o700)
	owed := Proposal{Branch: "proposals/w3/owed", Agent: "w3"}
	if err := a.recordProposal(owed); err != nil {
		t.Fatal(err)
	}
	for i := range proposalsKept + 5 {
		if err := a.recordProposal(Proposal{Branch: fmt.Sprintf("proposals/w2/%03d", i), Agent: "w2", Pushed: true}); err != nil {
			t.Fatal(err)
		}
	}
	list := a.Proposals()
	if len(list) != proposalsKept+1 {
		t.Fatalf("record holds %d proposals, want %d pushed + 1 owed", len(list), proposalsKept)
	}
	if list[0].Branch != owed.Branch || list[0].Pushed {
		t.Fatalf("the unpushed proposal was dropped: first is %+v", list[0])
	}
	if list[1].Branch != "proposals/w2/005" || list[len(list)-1].Branch != fmt.Sprintf("proposals/w2/%03d", proposalsKept+4) {
		t.Fatalf("kept %s .. %s, want the newest pushed", list[1].Branch, list[len(list)-1].Branch)
	}
	// Once pushed, it is trimmed like any other.
	owed.Pushed = true
	if err := a.recordProposal(owed); err != nil {
		t.Fatal(err)
	}
	if n := len(a.Proposals()); n != proposalsKept {
		t.Fatalf("record holds %d once all are pushed, want %d", n, proposalsKept)
	}
}
