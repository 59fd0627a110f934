package daemon

import (
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/shared"
)

// TestShared_LastDetachStopsTheUnit: a shared repository's unit runs
// while any agent is attached and stops (closed, no longer served) when
// the last attachment goes; attaching again starts a new one.
func TestShared_LastDetachStopsTheUnit(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir()}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close(t.Context())
	for _, id := range []string{"a1", "a2"} {
		if err := d.Manage(id); err != nil {
			t.Fatal(err)
		}
		at, err := shared.Attach(cfg, id, shared.Attachment{Name: "team"})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.attachShared(d.get(id), at); err != nil {
			t.Fatal(err)
		}
	}
	u := d.shared.unit("team")
	deadline := time.Now().Add(20 * time.Second)
	for !u.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the shared clone never became ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.detachShared(d.get("a1"), "team")
	if d.shared.unit("team") != u || !u.Ready() || u.Views() != 1 {
		t.Fatalf("one attachment left: unit %p ready %v views %d, want it running with one view", d.shared.unit("team"), u.Ready(), u.Views())
	}
	d.detachShared(d.get("a2"), "team")
	if d.shared.unit("team") != nil || u.Ready() {
		t.Fatalf("after the last detach the unit still runs (served %v, ready %v)", d.shared.unit("team") != nil, u.Ready())
	}
	at, _ := shared.Attach(cfg, "a1", shared.Attachment{Name: "team"})
	if err := d.attachShared(d.get("a1"), at); err != nil {
		t.Fatal(err)
	}
	if nu := d.shared.unit("team"); nu == nil || nu == u {
		t.Fatal("attaching again did not start a new unit")
	}
}
