package reminders_test

import (
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/reminders"
)

func TestBuild(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	if rs := reminders.Build(reminders.State{Agent: "a"}, now); len(rs) != 0 || reminders.Text(rs) != "" {
		t.Fatalf("clean state gives %v", rs)
	}
	st := reminders.State{
		Agent:            "a",
		Conflicts:        []string{"n.conflict-abc1234.md"},
		ErrorClass:       "auth",
		ErrorMessage:     "push: auth: authentication required",
		ReadOnlyRejected: []string{"system/persona.md"},
		HeldDeletes:      []string{"x.md"},
		Backups:          []string{"refs/memfsd/backup/1799990000", "refs/memfsd/backup/1700000000"},
	}
	rs := reminders.Build(st, now)
	kinds := []string{}
	for _, r := range rs {
		kinds = append(kinds, r.Kind)
	}
	if got := strings.Join(kinds, ","); got != "conflict,sync_failed,read_only_rejected,history_recovered,mass_delete_held" {
		t.Fatalf("kinds = %s", got)
	}
	text := reminders.Text(rs)
	for _, want := range []string{"<system-reminder>", "/memories/n.conflict-abc1234.md", "/memories/system/persona.md", "refs/memfsd/backup/1799990000", "--accept-deletes", "</system-reminder>"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "1700000000") {
		t.Error("an old backup is still reported")
	}
	st.ErrorClass = "retryable"
	if rs := reminders.Build(st, now); rs[1].Kind != "sync_delayed" {
		t.Fatalf("retryable gives %s", rs[1].Kind)
	}
}

func TestBuild_PathSkipped(t *testing.T) {
	rs := reminders.Build(reminders.State{Agent: "a", PathSkipped: []reminders.PathSkip{
		{Path: ".GIT", Reason: "x"}, {Path: "sub/.git", Reason: "y"},
	}}, time.Now())
	if len(rs) != 1 || rs[0].Kind != reminders.KindPathSkipped {
		t.Fatalf("reminders = %+v", rs)
	}
	for _, want := range []string{"Not saved: /memories/.GIT, /memories/sub/.git.", "Everything else", "move what you need"} {
		if !strings.Contains(rs[0].Text, want) {
			t.Errorf("text lacks %q:\n%s", want, rs[0].Text)
		}
	}
}
