package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// homeLockFile is the file `memfsd run` holds an exclusive flock on for
// its life: one daemon per home.
const homeLockFile = "memfsd.lock"

// lockHome takes <home>/memfsd.lock for this daemon (the kernel lets go
// when the process ends, even by kill -9) and writes its pid there. A
// second `memfsd run` on the same home would manage the same agents and
// take over the first's sockets: it is refused at once, naming the holder.
// The one-shot commands (sync, block set, ...) do not take it: they work
// beside a daemon.
func lockHome(home, homeArg string) (*os.File, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("home %s: %w", home, err)
	}
	path := filepath.Join(home, homeLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("home %s: lock: %w", home, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		holder := "another memfsd"
		if data, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); perr == nil && pid > 0 {
				holder = fmt.Sprintf("memfsd pid %d", pid)
			}
		}
		f.Close()
		return nil, fmt.Errorf("home %s is in use by %s (it holds %s): one daemon per home; stop that one first, or give this one its own --home (memfsd status%s shows the running one's agents)", home, holder, path, homeArg)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("home %s: lock %s: %w", home, path, err)
	}
	// The pid is for the message above; the flock is the lock.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// daemonPid is the pid of the `memfsd run` that holds home's lock, 0 when
// none does. It reads the kernel's table of locks (/proc/locks) and takes
// none itself: a daemon starting at that moment is never refused for it.
// Without /proc/locks, the pid the lock file names counts while that
// process runs memfsd.
func daemonPid(home string) int {
	path := filepath.Join(home, homeLockFile)
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return pidFileHolder(path)
	}
	// "1: FLOCK  ADVISORY  WRITE 27443 fe:00:9980772 0 EOF"
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}

// pidFileHolder is the pid in the lock file when that process still runs
// memfsd (0 otherwise).
func pidFileHolder(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "memfsd") {
		return 0
	}
	return pid
}

// besideDaemon is nil when no daemon runs on the home; else the error of a
// one-shot command that would work on agent id's repository itself beside
// it: the daemon owns the home's agents (one pipeline, one remote per
// agent), so the command says why it did not go through it and what to run
// instead. notManaged: the daemon answered that it does not manage id.
func (g *globals) besideDaemon(what, id string, notManaged bool) error {
	home := g.homeDir()
	pid := daemonPid(home)
	if pid == 0 {
		return nil
	}
	admin := g.adminAddr(home)
	if notManaged {
		add := "curl -X PUT -H 'Authorization: Bearer <admin token>' http://" + admin + "/v1/agents/" + id
		if path, ok := strings.CutPrefix(admin, "unix://"); ok {
			add = "curl --unix-socket " + path + " -X PUT http://memfsd/v1/agents/" + id
		}
		return fmt.Errorf("%s --agent %s: the daemon on home %s (memfsd pid %d) does not manage agent %s, and a command beside it does not work on the agent's repository itself: add the agent to the daemon (%s), then run this again; or stop the daemon first",
			what, id, home, pid, id, add)
	}
	return fmt.Errorf("%s --agent %s: a daemon runs on home %s (memfsd pid %d) but this command could not reach it on %s or %s, and a command beside it does not work on the agent's repository itself: give this command the daemon's --listen and --admin-listen (and their token files), or stop the daemon first",
		what, id, home, pid, g.listenAddr(home), admin)
}
