package main_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

// The fuzz/soak of issue 27: a seeded mutator writes what a hostile (or
// careless) shell could into agent a's .git — random bytes, FIFOs, links
// (to /dev/zero, to other files, loops), symbolic refs pointing at
// themselves or at each other, huge sparse files, truncated or flipped
// copies of the real file, folders where files should be — round after
// round, sometimes putting the real files back, while agent b in the same
// daemon writes (memory tool and direct writes) and pushes. Each round
// every status and the agents' list answer within answerBound, /healthz
// answers, the process lives and its RSS stays under walls fuzz RSS cap.
// At the end every write of b's is on b's remote (fsck --strict clean),
// a file outside both folders that links pointed at is unchanged, a's
// .git is restored from the copy taken at start and a writes and pushes
// again, and SIGTERM ends the daemon within --shutdown-timeout + 2 s.
//
// MEMFSD_WALLS_SEED sets the seed (printed); the suite runs ~20 s,
// MEMFSD_SOAK=1 4 minutes (scripts/soak.sh walls; 10 once the memory drift is shown to level off).

// wallsFuzzRSSCap bounds the daemon's resident memory (race detector
// included) through the fuzz: 256 MiB in the suite's 20 s. The soak found
// the daemon's heap growing about 2 MiB/s (the tree cache, bounded by
// count and not by size: fixed, TestObjects_TreeCacheBoundedInEntries);
// a slower drift remains (non-race RSS 93-147 MiB at 4-5 minutes, not yet
// shown to level off), so the soak holds it to 1 GiB and prints the peak.
var wallsFuzzRSSCap = soak.Int(256, 1024)

// fuzzTargets are the files of a's .git the mutator writes (besides
// files under objects/, picked from what is there).
var fuzzTargets = []string{
	"HEAD", "refs/heads/main", "refs/remotes/origin/main", "packed-refs",
	"index", "config", "objects/info/alternates", "objects/info/packs",
}

// dirTargets are folders of a's .git the mutator replaces (a FIFO, a
// file or a link where git keeps a folder).
var dirTargets = []string{
	"objects/pack", "objects/info", "refs/heads", "refs/remotes/origin",
	"refs/memfsd/backup", "memfsd/spare", "memfsd",
}

// refTargets are the targets a symbolic ref may name (loops of two).
var refTargets = []string{"HEAD", "refs/heads/main", "refs/remotes/origin/main", "refs/heads/loop"}

var fuzzKinds = []string{
	"bytes", "flip", "truncate", "fifo", "link-devzero", "link-file",
	"link-loop", "ref-self", "ref-loop2", "ref-missing", "sparse", "dir",
}

type gitMutator struct {
	rng     *rand.Rand
	gitDir  string          // a's .git
	saved   string          // its copy taken at start
	others  []string        // files outside a's .git a link may point at
	touched map[string]bool // paths (relative to gitDir) changed since start
	counts  map[string]int
}

func (m *gitMutator) pickTarget() string {
	switch r := m.rng.Intn(16); {
	case r < 2:
		return dirTargets[m.rng.Intn(len(dirTargets))]
	case r < 3:
		// A folder of loose objects.
		ents, _ := os.ReadDir(filepath.Join(m.gitDir, "objects"))
		var dirs []string
		for _, e := range ents {
			if e.IsDir() && len(e.Name()) == 2 {
				dirs = append(dirs, "objects/"+e.Name())
			}
		}
		if len(dirs) > 0 {
			return dirs[m.rng.Intn(len(dirs))]
		}
	case r < 8:
		top := "objects"
		if r < 4 {
			top = "memfsd" // memfsd's own files there
		}
		var objs []string
		filepath.WalkDir(filepath.Join(m.gitDir, top), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				rel, _ := filepath.Rel(m.gitDir, path)
				objs = append(objs, filepath.ToSlash(rel))
			}
			return nil
		})
		if len(objs) > 0 {
			sort.Strings(objs) // the walk's order is the seed's, not the file system's
			return objs[m.rng.Intn(len(objs))]
		}
	}
	return fuzzTargets[m.rng.Intn(len(fuzzTargets))]
}

func (m *gitMutator) savedBytes(rel string) []byte {
	data, _ := os.ReadFile(filepath.Join(m.saved, filepath.FromSlash(rel)))
	return data
}

func (m *gitMutator) randBytes(n int) []byte {
	b := make([]byte, n)
	m.rng.Read(b)
	return b
}

// clear removes rel (whatever it is) and makes its parent folders.
func (m *gitMutator) clear(rel string) string {
	p := filepath.Join(m.gitDir, filepath.FromSlash(rel))
	m.touched[rel] = true
	// An ancestor the mutator made something else than a folder goes.
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		anc := strings.Join(parts[:i], "/")
		if fi, err := os.Lstat(filepath.Join(m.gitDir, filepath.FromSlash(anc))); err == nil && !fi.IsDir() {
			os.RemoveAll(filepath.Join(m.gitDir, filepath.FromSlash(anc)))
			m.touched[anc] = true
		}
	}
	os.RemoveAll(p)
	os.MkdirAll(filepath.Dir(p), 0o755)
	return p
}

// mutate writes one random thing at one random target; it returns what.
func (m *gitMutator) mutate(t *testing.T) string {
	rel := m.pickTarget()
	kind := fuzzKinds[m.rng.Intn(len(fuzzKinds))]
	m.counts[kind]++
	m.apply(t, kind, rel)
	return kind + " " + rel
}

func (m *gitMutator) apply(t *testing.T, kind, rel string) {
	// The daemon may make a folder again between clear and the write
	// (memfsd/spare, say): try again a few times, then let it be.
	write := func(rel string, data []byte) {
		for try := 0; os.WriteFile(m.clear(rel), data, 0o644) != nil && try < 5; try++ {
		}
	}
	switch kind {
	case "bytes":
		n := []int{0, 1 + m.rng.Intn(64), m.rng.Intn(8 << 10), m.rng.Intn(256 << 10)}[m.rng.Intn(4)]
		write(rel, m.randBytes(n))
	case "flip":
		data := m.savedBytes(rel)
		if len(data) == 0 {
			data = m.randBytes(1 + m.rng.Intn(64))
		}
		for k := 1 + m.rng.Intn(8); k > 0; k-- {
			data[m.rng.Intn(len(data))] = byte(m.rng.Intn(256))
		}
		write(rel, data)
	case "truncate":
		data := m.savedBytes(rel)
		if len(data) > 0 {
			data = data[:m.rng.Intn(len(data))]
		}
		write(rel, data)
	case "fifo":
		for try := 0; syscall.Mkfifo(m.clear(rel), 0o644) != nil && try < 5; try++ {
		}
	case "link-devzero":
		os.Symlink("/dev/zero", m.clear(rel))
	case "link-file":
		var target string
		if m.rng.Intn(2) == 0 {
			target = m.others[m.rng.Intn(len(m.others))]
		} else {
			target = filepath.Join(m.gitDir, filepath.FromSlash(fuzzTargets[m.rng.Intn(len(fuzzTargets))]))
		}
		os.Symlink(target, m.clear(rel))
	case "link-loop":
		p := m.clear(rel)
		if m.rng.Intn(2) == 0 {
			os.Symlink(p, p)
		} else {
			m.clear(rel + ".lnk")
			os.Symlink(p+".lnk", p)
			os.Symlink(p, p+".lnk")
		}
	case "ref-self":
		write(rel, []byte("ref: "+rel+"\n"))
	case "ref-loop2":
		other := refTargets[m.rng.Intn(len(refTargets))]
		if other == rel {
			other = "refs/heads/loop"
		}
		write(rel, []byte("ref: "+other+"\n"))
		if other != rel {
			write(other, []byte("ref: "+rel+"\n"))
		}
	case "ref-missing":
		write(rel, []byte(fmt.Sprintf("%x\n", m.randBytes(20))))
	case "sparse":
		sizes := []int64{5 << 10, 2 << 20, 100 << 20, 300 << 20, 2 << 30, 1 << 40}
		p := m.clear(rel)
		f, err := os.Create(p)
		if err != nil {
			return // the daemon made a folder there again
		}
		f.Write(m.savedBytes(rel))
		f.Truncate(sizes[m.rng.Intn(len(sizes))])
		f.Close()
	case "dir":
		p := m.clear(rel)
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, "x"), []byte("not a file of git's\n"), 0o644)
	default:
		t.Fatalf("unknown kind %q", kind)
	}
}

// restore puts back every path touched since start as the copy has it.
func (m *gitMutator) restore(t *testing.T) {
	rels := make([]string, 0, len(m.touched))
	for rel := range m.touched {
		rels = append(rels, rel)
	}
	// Shallowest first: a folder the mutator replaced comes back before
	// what the copy has below it (a path below a folder the mutator made
	// is then nothing to restore).
	sort.Slice(rels, func(i, j int) bool { return len(rels[i]) < len(rels[j]) })
	for _, rel := range rels {
		p := filepath.Join(m.gitDir, filepath.FromSlash(rel))
		os.RemoveAll(p)
		if err := copyTree(filepath.Join(m.saved, filepath.FromSlash(rel)), p); err != nil {
			t.Fatalf("restore %s: %v", rel, err)
		}
	}
	m.touched = map[string]bool{}
}

// copyTree copies src (a file, link or folder; missing is nothing) to dst.
// restoreAll puts back the whole .git as the copy has it: refs, index and
// objects from one moment, as a person restoring a backup would. (Putting
// back only the touched paths can leave refs and the index naming objects
// that a restored objects folder no longer holds: a repository git fsck
// calls broken, which memfsd does not rebuild; see the stop note.)
func (m *gitMutator) restoreAll(t *testing.T) {
	ents, err := os.ReadDir(m.gitDir)
	if err != nil {
		t.Fatalf("restore .git: %v", err)
	}
	for _, e := range ents {
		os.RemoveAll(filepath.Join(m.gitDir, e.Name()))
	}
	if err := copyTree(m.saved, m.gitDir); err != nil {
		t.Fatalf("restore .git: %v", err)
	}
	m.touched = map[string]bool{}
}

func copyTree(src, dst string) error {
	fi, err := os.Lstat(src)
	if os.IsNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case fi.IsDir():
		if err := os.MkdirAll(dst, fi.Mode().Perm()); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, fi.Mode().Perm())
	}
	return fmt.Errorf("%s: unexpected %s", src, fi.Mode().Type())
}

// bWriter is agent b writing and pushing throughout: memory-tool writes
// and direct writes, one new file each, and turns.
type bWriter struct {
	p       *proc
	c       *http.Client // the agent socket, each call bounded
	dir     string
	mu      sync.Mutex
	written map[string]string // name → text
	tool    int
	direct  int
	turns   int
	errs    []string
}

func (w *bWriter) run(stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		name := fmt.Sprintf("b-%05d.md", i)
		text := fmt.Sprintf("b's write %d\n", i)
		if i%2 == 0 {
			body := fmt.Sprintf(`{"command":"create","path":"/memories/%s","file_text":%q}`, name, text)
			var res struct {
				Content string `json:"content"`
				IsError bool   `json:"is_error"`
			}
			code, err := w.p.callOn(w.c, "POST", "/v1/agents/b/memory", body, &res)
			if err != nil || code != 200 || res.IsError {
				w.mu.Lock()
				w.errs = append(w.errs, fmt.Sprintf("memory tool %s: %d %v %s", name, code, err, res.Content))
				w.mu.Unlock()
				continue
			}
			w.mu.Lock()
			w.tool++
			w.written[name] = text
			w.mu.Unlock()
		} else {
			if err := os.WriteFile(filepath.Join(w.dir, name), []byte(text), 0o600); err != nil {
				w.mu.Lock()
				w.errs = append(w.errs, fmt.Sprintf("direct write %s: %v", name, err))
				w.mu.Unlock()
				continue
			}
			w.mu.Lock()
			w.direct++
			w.written[name] = text
			w.mu.Unlock()
		}
		if i%3 == 2 {
			w.p.postTurn("b", "1s")
			w.mu.Lock()
			w.turns++
			w.mu.Unlock()
		}
		time.Sleep(20 * time.Millisecond) // pacing
	}
}

// postTurn asks for a turn of id, waiting at most wait for its answer.
func (p *proc) postTurn(id, wait string) {
	ctx, cancel := context.WithTimeout(context.Background(), answerBound+time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://memfsd/v1/agents/"+id+"/turn?wait="+wait, nil)
	if resp, err := p.api.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// remoteFiles is name → content of every file on main of the bare repo.
func remoteFiles(bare string) (map[string]string, error) {
	names, err := gitTry(bare, "ls-tree", "-r", "--name-only", "main")
	if err != nil {
		return nil, err
	}
	var in bytes.Buffer
	var list []string
	for _, n := range strings.Split(strings.TrimSpace(names), "\n") {
		if n != "" {
			list = append(list, n)
			fmt.Fprintf(&in, "main:%s\n", n)
		}
	}
	cmd := exec.Command("git", "-C", bare, "cat-file", "--batch")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	r := bufio.NewReader(bytes.NewReader(out))
	for _, n := range list {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return nil, fmt.Errorf("cat-file %s: %q", n, header)
		}
		size, _ := strconv.Atoi(f[2])
		body := make([]byte, size+1)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, err
		}
		files[n] = string(body[:size])
	}
	return files, nil
}

func TestWalls_FuzzOneAgentsGitDir(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	if v := os.Getenv("MEMFSD_WALLS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("MEMFSD_WALLS_SEED=%q: %v", v, err)
		}
	}
	t.Logf("walls fuzz: seed %d (MEMFSD_WALLS_SEED=%d to run it again)", seed, seed)
	duration := soak.Duration(20*time.Second, 4*time.Minute) // 10 min once the drift (wallsFuzzRSSCap) is shown to level off
	const shutdown = 3 * time.Second

	srv := gitserver.New(t, token)
	home := t.TempDir()
	// A .git put back from a copy has an index that differs from HEAD,
	// which memfsd reads as a person's git in progress and waits on
	// (--person-git-wait, 3 min by default): 2 s here.
	p := startDaemon(t, srv, home, "--agent", "a", "--agent", "b", "--shutdown-timeout", shutdown.String(), "--person-git-wait", "2s")
	aDir, bDir := memDir(home, "a"), memDir(home, "b")
	gitDir := filepath.Join(aDir, ".git")
	saved := filepath.Join(t.TempDir(), "a-git")
	if err := copyTree(gitDir, saved); err != nil {
		t.Fatal(err)
	}
	decoy := filepath.Join(t.TempDir(), "decoy")
	const decoyText = "a file outside both folders: links point here, nothing may write it\n"
	if err := os.WriteFile(decoy, []byte(decoyText), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &gitMutator{
		rng:    rand.New(rand.NewSource(seed)),
		gitDir: gitDir,
		saved:  saved,
		others: []string{
			decoy,
			filepath.Join(bDir, ".git", "HEAD"),
			filepath.Join(bDir, ".git", "refs", "heads", "main"),
			filepath.Join(bDir, ".git", "index"),
			filepath.Join(bDir, ".git", "config"),
		},
		touched: map[string]bool{},
		counts:  map[string]int{},
	}

	w := &bWriter{p: p, c: &http.Client{Transport: p.api.Transport, Timeout: 10 * time.Second}, dir: bDir, written: map[string]string{}}
	// exited is closed when the daemon has exited (one Wait, here).
	exited := make(chan struct{})
	go func() { p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() { // before launchDaemon's, which then sees the exit
		p.cmd.Process.Kill()
		<-exited
	})
	// fail ends the test with the daemon's goroutines in its log.
	fail := func(format string, args ...any) {
		t.Helper()
		p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf(format, args...)
	}
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); w.run(stop) }()
	stopWriter := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-writerDone
	}
	t.Cleanup(stopWriter)

	var maxLatency time.Duration
	maxRSS, rounds, restores, aWrites := 0, 0, 0, 0
	var last []string // the last rounds' mutations, for a failure's message
	timed := func(path string, out any) {
		t.Helper()
		code, took, err := p.timedGet(path, out)
		if took > maxLatency {
			maxLatency = took
		}
		if err != nil || code != 200 || took > answerBound {
			fail("round %d: GET %s: %d after %s (want 200 within %s): %v\nlast mutations: %s", rounds, path, code, took.Round(time.Millisecond), answerBound, err, strings.Join(last, "; "))
		}
	}
	deadline := time.Now().Add(duration)
	for ; time.Now().Before(deadline); rounds++ {
		if len(m.touched) > 0 && m.rng.Intn(5) == 0 {
			m.restore(t)
			restores++
		}
		for k := 1 + m.rng.Intn(3); k > 0; k-- {
			last = append(last, fmt.Sprintf("r%d %s", rounds, m.mutate(t)))
		}
		if len(last) > 12 {
			last = last[len(last)-12:]
		}
		if m.rng.Intn(3) == 0 {
			// a's shell writes too: a commit on top of whatever is there.
			os.WriteFile(filepath.Join(aDir, fmt.Sprintf("a-%d.md", rounds)), []byte("a's direct write\n"), 0o600)
			aWrites++
		}
		p.postTurn("a", "100ms")
		var st status
		timed("/v1/agents/a/status", &st)
		timed("/v1/agents/b/status", &st)
		var list struct {
			Agents []status `json:"agents"`
		}
		timed("/v1/agents", &list)
		if len(list.Agents) != 2 {
			t.Fatalf("round %d: %d agents listed", rounds, len(list.Agents))
		}
		timed("/healthz", nil)
		if rss := rssMiB(p.cmd.Process.Pid); rss > maxRSS {
			maxRSS = rss
			if rss > wallsFuzzRSSCap {
				t.Fatalf("round %d: daemon RSS %d MiB > %d MiB; last mutations: %s", rounds, rss, wallsFuzzRSSCap, strings.Join(last, "; "))
			}
		}
		w.mu.Lock()
		werr := append([]string(nil), w.errs...)
		w.mu.Unlock()
		if len(werr) > 0 {
			fail("round %d: b's writes refused or stalled (%d), first: %s; last mutations: %s", rounds, len(werr), werr[0], strings.Join(last, "; "))
		}
		select {
		case <-exited:
			t.Fatalf("round %d: the daemon exited; last mutations: %s", rounds, strings.Join(last, "; "))
		default:
		}
		time.Sleep(time.Duration(m.rng.Intn(30)) * time.Millisecond) // pacing
	}
	stopWriter()
	w.mu.Lock()
	if len(w.errs) > 0 {
		t.Errorf("b's writes refused (%d), first: %s", len(w.errs), w.errs[0])
	}
	written := w.written
	w.mu.Unlock()

	// Every write of b's reaches b's remote.
	var missing []string
	for end := time.Now().Add(60 * time.Second); ; {
		p.postTurn("b", "2s")
		files, err := remoteFiles(srv.RepoDir("b"))
		missing = missing[:0]
		for name, text := range written {
			if files[name] != text {
				missing = append(missing, name)
			}
		}
		if err == nil && len(missing) == 0 {
			break
		}
		if time.Now().After(end) {
			sort.Strings(missing)
			fail("after 60 s, %d of b's %d writes not on b's remote (%v), first: %v", len(missing), len(written), err, missing[:min(len(missing), 5)])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := gitTry(srv.RepoDir("b"), "fsck", "--strict"); err != nil {
		t.Errorf("fsck of b's remote: %s", out)
	}
	if data, err := os.ReadFile(decoy); err != nil || string(data) != decoyText {
		t.Errorf("the file outside both folders was changed through a link: %q %v", data, err)
	}

	// a's .git put back as it was: a writes and pushes again.
	m.restoreAll(t)
	recovered := "yes"
	var res struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	if code, err := p.callOn(w.c, "POST", "/v1/agents/a/memory", `{"command":"create","path":"/memories/a-after.md","file_text":"a is back\n"}`, &res); err != nil || code != 200 || res.IsError {
		fail("a's write after its .git was restored: %d %v %s", code, err, res.Content)
	}
	// 60 s: a's syncs may sit in a retry backoff (up to --retry-max) from
	// the fuzz when its .git is put back, on a loaded machine longer.
	for end := time.Now().Add(60 * time.Second); ; {
		p.postTurn("a", "2s")
		if got, err := gitTry(srv.RepoDir("a"), "show", "main:a-after.md"); err == nil && got == "a is back" {
			break
		}
		if time.Now().After(end) {
			fail("a's write after its .git was restored not on a's remote after 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	st := p.status("a")
	if st.State == "error" {
		recovered = "no"
		t.Errorf("a still in the error state after its .git was restored: %s", st.LastError)
	}
	waitRepackIdle(t, bDir)
	if out, err := gitTry(bDir, "fsck", "--strict"); err != nil {
		t.Errorf("fsck of b's folder: %s", out)
	}

	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(shutdown + 2*time.Second):
		fail("still running %s after SIGTERM with --shutdown-timeout %s", time.Since(start).Round(time.Millisecond), shutdown)
	}
	stopped := time.Since(start)

	kinds := make([]string, 0, len(m.counts))
	total := 0
	for _, k := range fuzzKinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, m.counts[k]))
		total += m.counts[k]
	}
	t.Logf("walls fuzz: seed %d, %s, %d rounds, %d mutations (%s), %d restores, a's direct writes %d; b's writes %d (tool %d, direct %d), turns %d, lost 0; max status latency %s, max RSS %d MiB; a recovered %s; SIGTERM exit in %s",
		seed, duration, rounds, total, strings.Join(kinds, ", "), restores, aWrites, len(written), w.tool, w.direct, w.turns,
		maxLatency.Round(time.Millisecond), maxRSS, recovered, stopped.Round(time.Millisecond))
}

// A FIFO at a pack's .idx in agent a's folder (found by the fuzz above):
// before, go-git's storage opened it with a blocking open(2) when it read
// the pack list afresh (here: a's branch names a commit no pack has, and
// the push looks again), which never returned, even once the FIFO was
// gone: a never committed or pushed again (status still answered, from
// the last known state). Now the sync fails naming the file, and once the
// files are back a's writes reach its remote.
func TestWalls_FIFOAtPackIndexThenRemoved(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "a", "--agent", "b")
	aDir := memDir(home, "a")
	gitDir := filepath.Join(aDir, ".git")
	idxs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.idx"))
	if len(idxs) == 0 {
		t.Fatal("no pack index in a's .git")
	}
	branch := filepath.Join(gitDir, "refs", "heads", "main")
	saved := map[string][]byte{}
	for _, f := range append(idxs, branch) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		saved[f] = data
	}
	for _, idx := range idxs {
		os.Remove(idx)
		if err := syscall.Mkfifo(idx, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(branch, []byte("0123456789abcdef0123456789abcdef01234567\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		p.kickTurn(t, "a")
		p.answersInTime(t, "a", "b")
	}
	p.writeAndPush(t, srv, "b", "b.md", "b goes on\n")
	for f, data := range saved {
		os.Remove(f)
		if err := os.WriteFile(f, data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	p.writeAndPush(t, srv, "a", "a-after.md", "a is back\n")
}
