package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
