package main

import (
	"github.com/memfsd/memfsd/daemon"
	"github.com/memfsd/memfsd/reminders"
)

func daemonOfflineReminders(st daemon.Status) []reminders.Reminder {
	return daemon.OfflineReminders(st)
}

func remindersText(rs []reminders.Reminder) string { return reminders.Text(rs) }
