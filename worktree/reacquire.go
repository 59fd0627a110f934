package worktree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Reacquire lets the processes waiting to open the file go on, waits until
// each of them has opened it, then takes the lease again once none has it
// open any more (they wrote and closed), within wait (ErrBusy).
//
// Taking the lease back as soon as it is free is not enough: a waiter that
// was woken but not yet run (a loaded machine) holds no write access yet,
// so the kernel grants the lease again, and the waiter then opens and
// writes after the caller has read the file and let it go (seen on Linux
// 6.18: a `>>` writer's bytes landed in a file already removed). So the
// waiters are counted first (the blocked BREAKER entries of the lease in
// /proc/locks) and their opens watched (inotify IN_OPEN on the descriptor,
// whatever name the file has now).
func (l *Leased) Reacquire(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("watch the file's opens: %w", err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, "/proc/self/fd/"+strconv.Itoa(l.fd), unix.IN_OPEN|unix.IN_CLOSE); err != nil {
		return fmt.Errorf("watch the file's opens: %w", err)
	}
	for {
		waiting := max(l.waiters(), 1)
		if _, err := unix.FcntlInt(uintptr(l.fd), unix.F_SETLEASE, unix.F_UNLCK); err != nil {
			return err
		}
		for opened := 0; opened < waiting; {
			n, err := inotifyOpens(in, time.Until(deadline))
			if err != nil {
				return err
			}
			if n == 0 && time.Now().After(deadline) {
				return ErrBusy
			}
			opened += n
		}
		for {
			_, err := unix.FcntlInt(uintptr(l.fd), unix.F_SETLEASE, unix.F_WRLCK)
			if err == nil {
				break
			}
			if !errors.Is(err, unix.EAGAIN) {
				return err
			}
			if time.Now().After(deadline) {
				return ErrBusy
			}
			// Someone still has it open: wait for a close.
			if _, err := inotifyOpens(in, min(time.Until(deadline), 50*time.Millisecond)); err != nil {
				return err
			}
		}
		if !l.BreakPending() {
			return syscall.Fstat(l.fd, &l.stat)
		}
		// Another open came meanwhile: let it through as well.
	}
}

// inotifyOpens waits up to wait for events on the inotify descriptor in
// and returns how many of them were opens.
func inotifyOpens(in int, wait time.Duration) (int, error) {
	fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds, int(max(wait, 0)/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
		return 0, err
	}
	var buf [4096]byte
	opens := 0
	for {
		n, err := unix.Read(in, buf[:])
		if errors.Is(err, unix.EAGAIN) || n <= 0 {
			return opens, nil
		}
		if err != nil {
			return opens, err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			// struct inotify_event: wd, mask, cookie, len, then the name.
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			if mask&unix.IN_OPEN != 0 {
				opens++
			}
			off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
		}
	}
}

// waiters counts the processes blocked on this file's lease: the
// "N: -> LEASE BREAKER" lines under its lease in /proc/locks.
func (l *Leased) waiters() int {
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	id := fmt.Sprintf(" %02x:%02x:%d ", unix.Major(l.stat.Dev), unix.Minor(l.stat.Dev), l.stat.Ino)
	pid := " " + strconv.Itoa(os.Getpid()) + " "
	n, index := 0, ""
	for _, line := range strings.Split(string(locks), "\n") {
		num, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(rest), "->") {
			if num == index {
				n++
			}
			continue
		}
		index = ""
		if strings.Contains(rest, " LEASE ") && strings.Contains(rest, id) && strings.Contains(rest, pid) {
			index = num
		}
	}
	return n
}
