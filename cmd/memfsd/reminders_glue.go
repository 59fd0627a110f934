package main

import (
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/reminders"
)

func daemonOfflineReminders(st agent.Status) []reminders.Reminder {
	return agent.BuildReminders(st, time.Now())
}

func remindersText(rs []reminders.Reminder) string { return reminders.Text(rs) }
