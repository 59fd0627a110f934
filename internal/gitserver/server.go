// Package gitserver is a real smart-HTTP git server for tests: `git
// http-backend` behind net/http/cgi, serving /v1/git/{agent}/state.git, with
// Basic auth and fault hooks in front of it.
package gitserver

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Username is the Basic auth user the server expects when a token is set.
const Username = "memfsd"

var repoPath = regexp.MustCompile(`^/v1/git/([A-Za-z0-9._-]{1,128})/state\.git(/.*)?$`)

// hostPath is the layout of other git hosts: /<owner>/<name>.git, served
// from the same repositories (the agent id is the name).
// sharedPath is letta-code's shared repository: every agent's URL of
// repository <name> reaches one repository, kept as "repositories.<name>"
// (SharedRepoDir).
var sharedPath = regexp.MustCompile(`^/v1/git/[A-Za-z0-9._-]{1,128}/repositories/([A-Za-z0-9._-]{1,64})\.git(/.*)?$`)

var hostPath = regexp.MustCompile(`^/[A-Za-z0-9._-]+/([A-Za-z0-9._-]{1,128})\.git(/.*)?$`)

// Server serves bare repositories under Root over smart HTTP.
type Server struct {
	// Root holds the bare repositories, at v1/git/<agent>/state.git.
	Root string
	// URL is the base URL (no trailing slash), e.g. http://127.0.0.1:1234.
	URL string

	token   string // guarded by mu: SetToken rotates it
	backend string
	http    *httptest.Server
	done    chan struct{} // closed by Close: hanging requests end
	// devNull takes the backend's stderr: a file, not a pipe, so a CGI
	// request never waits on a pipe that a child of git (a detached
	// `git gc --auto` after a push) might still hold.
	devNull *os.File
	once    sync.Once

	mu     sync.Mutex
	faults []*Fault
	// strict serves only repositories that exist (404 otherwise), as a
	// real host does; by default they are created on first use. With
	// createOnPush a push creates a missing one (push-to-create).
	strict, createOnPush bool

	chaosRate float64
	chaosRand *rand.Rand

	requests atomic.Int64
	faulted  atomic.Int64
	log      []string // "METHOD path?query" of every request
}

// Fault answers requests that match it instead of the git backend.
type Fault struct {
	// Match is a substring of "METHOD path?query"; empty matches every request.
	Match string
	// Count is how many matching requests the fault takes; < 0 means all.
	Count int
	// Status is the HTTP status to answer (0 with Reset or Delay only).
	Status int
	// Header is added to the fault's answer (e.g. Retry-After).
	Header http.Header
	// Reset closes the connection without an answer.
	Reset bool
	// Delay is waited before answering (or passing the request on).
	Delay time.Duration
	// Hang accepts the request and says nothing until Release is called
	// (then the request is passed on), the client goes away, or the server
	// closes: a silent remote.
	Hang bool
	// Hits counts the requests the fault took.
	Hits atomic.Int64

	releaseOnce sync.Once
	release     chan struct{}
	closeOnce   sync.Once
}

func (f *Fault) released() chan struct{} {
	f.releaseOnce.Do(func() { f.release = make(chan struct{}) })
	return f.release
}

// Release lets the requests a Hang fault holds (and later ones) go on.
func (f *Fault) Release() {
	ch := f.released()
	f.closeOnce.Do(func() { close(ch) })
}

// New starts a server on loopback; it is closed when the test ends. A
// non-empty token makes every request require Basic auth with that password.
func New(tb testing.TB, token string) *Server {
	tb.Helper()
	s, err := Start(tb.TempDir(), token)
	if err != nil {
		tb.Fatalf("start git server: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server on loopback that keeps its repositories under root.
func Start(root, token string) (*Server, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("find git exec path: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return nil, fmt.Errorf("find git-http-backend: %w", err)
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	s := &Server{Root: root, token: token, backend: backend, done: make(chan struct{}), devNull: devNull}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.http.URL
	return s, nil
}

// Close stops the server; requests held by a Hang fault end first.
func (s *Server) Close() {
	s.once.Do(func() { close(s.done) })
	s.http.Close()
	s.devNull.Close()
}

// SetToken changes the password the server accepts from now on (a
// rotated credential: the old one is refused from the next request).
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// SetStrict makes the server answer 404 for repositories that do not exist
// (as a real host does), creating one on a push when createOnPush.
func (s *Server) SetStrict(strict, createOnPush bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strict, s.createOnPush = strict, createOnPush
}

// HostURL is the agent's repository in the other hosts' layout,
// <URL>/<owner>/<agent>.git.
func (s *Server) HostURL(owner, agent string) string {
	return s.URL + "/" + owner + "/" + agent + ".git"
}

// RemoteURL is the agent's state.git URL.
func (s *Server) RemoteURL(agent string) string {
	return s.URL + "/v1/git/" + agent + "/state.git"
}

// sharedPrefix names a shared repository's folder among the agents'.
const sharedPrefix = "repositories."

// SharedURL is agent's URL of shared repository name (letta-code's
// <base>/v1/git/<agent>/repositories/<name>.git): the same repository for
// every agent.
func (s *Server) SharedURL(agent, name string) string {
	return s.URL + "/v1/git/" + agent + "/repositories/" + name + ".git"
}

// SharedRepoDir is shared repository name's bare repository on disk.
func (s *Server) SharedRepoDir(name string) string { return s.RepoDir(sharedPrefix + name) }

// RepoDir is the bare repository of the agent on disk (created if missing).
func (s *Server) RepoDir(agent string) string {
	dir := filepath.Join(s.Root, "v1", "git", agent, "state.git")
	if err := s.ensureRepo(dir); err != nil {
		panic(err)
	}
	return dir
}

// Requests is the number of requests served or faulted so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Faulted is the number of requests answered by a fault.
func (s *Server) Faulted() int64 { return s.faulted.Load() }

// AddFault installs a fault in front of the backend and returns it.
func (s *Server) AddFault(f *Fault) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
	return f
}

// FailNext answers status for the next n requests whose "METHOD path?query"
// contains match.
func (s *Server) FailNext(match string, n, status int) *Fault {
	return s.AddFault(&Fault{Match: match, Count: n, Status: status})
}

// SetChaos faults a share rate of all requests at random: an HTTP 503 or
// 520–524, a reset connection, or a delay of up to 300 ms before serving.
// rate 0 turns it off.
func (s *Server) SetChaos(rate float64, seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chaosRate = rate
	s.chaosRand = rand.New(rand.NewSource(seed))
}

func (s *Server) chaosFault() *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chaosRate <= 0 || s.chaosRand.Float64() >= s.chaosRate {
		return nil
	}
	switch k := s.chaosRand.Intn(8); {
	case k < 5:
		return &Fault{Status: []int{503, 520, 521, 522, 523, 524}[s.chaosRand.Intn(6)]}
	case k < 6:
		return &Fault{Reset: true}
	default:
		return &Fault{Delay: time.Duration(s.chaosRand.Intn(300)) * time.Millisecond}
	}
}

// RemoveFault takes f away (under the server's lock: a daemon's
// background retry may be asking for a fault at the same moment).
func (s *Server) RemoveFault(f *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = slices.DeleteFunc(s.faults, func(g *Fault) bool { return g == f })
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

func (s *Server) takeFault(r *http.Request) *Fault {
	key := r.Method + " " + r.URL.RequestURI()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if f.Count == 0 || !strings.Contains(key, f.Match) {
			continue
		}
		if f.Count > 0 {
			f.Count--
		}
		f.Hits.Add(1)
		return f
	}
	return nil
}

// RequestsMatching counts the requests whose "METHOD path?query" contains sub.
func (s *Server) RequestsMatching(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.log {
		if strings.Contains(k, sub) {
			n++
		}
	}
	return n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	s.log = append(s.log, r.Method+" "+r.URL.RequestURI())
	s.mu.Unlock()
	f := s.takeFault(r)
	if f == nil {
		f = s.chaosFault()
	}
	if f != nil {
		if f.Delay > 0 {
			time.Sleep(f.Delay)
		}
		if f.Hang {
			select {
			case <-f.released():
			case <-r.Context().Done():
				return
			case <-s.done:
				return
			}
		}
		if f.Reset {
			s.faulted.Add(1)
			resetConn(w)
			return
		}
		if f.Status != 0 {
			s.faulted.Add(1)
			for k, v := range f.Header {
				w.Header()[k] = v
			}
			http.Error(w, http.StatusText(f.Status), f.Status)
			return
		}
	}
	s.mu.Lock()
	want := s.token
	s.mu.Unlock()
	if want != "" {
		_, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(want)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="memfsd"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	m := repoPath.FindStringSubmatch(r.URL.Path)
	if sm := sharedPath.FindStringSubmatch(r.URL.Path); m == nil && sm != nil {
		m = []string{sm[0], sharedPrefix + sm[1], sm[2]}
		r.URL.Path = "/v1/git/" + m[1] + "/state.git" + m[2] // the backend's layout
	}
	if m == nil {
		if m = hostPath.FindStringSubmatch(r.URL.Path); m != nil {
			r.URL.Path = "/v1/git/" + m[1] + "/state.git" + m[2] // the backend's layout
		}
	}
	if m == nil || m[1] == "." || m[1] == ".." {
		http.NotFound(w, r)
		return
	}
	dir := filepath.Join(s.Root, "v1", "git", m[1], "state.git")
	push := strings.Contains(r.URL.RawQuery, "git-receive-pack") || strings.HasSuffix(r.URL.Path, "/git-receive-pack")
	s.mu.Lock()
	strict, createOnPush := s.strict, s.createOnPush
	s.mu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil && strict && !(createOnPush && push) {
		http.NotFound(w, r)
		return
	}
	if err := s.ensureRepo(dir); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// A client that dies mid-body must not leave receive-pack waiting on its
	// stdin for good (Close waits for every request): the body has two
	// minutes to arrive. net/http clears the deadline for the connection's
	// next request.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyDeadline))
	// The whole body is read before the backend starts: Go's CGI handler
	// cannot pass a chunked body on (the backend gets a Content-Length), and
	// a body cut short (a client killed mid-push) must be refused here: git
	// 2.39's receive-pack, given a Content-Length its stdin never reaches,
	// re-reads stdin for good, and Close waits for it.
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil || (r.ContentLength >= 0 && int64(len(body)) != r.ContentLength) {
			http.Error(w, fmt.Sprintf("request body cut short (%d of %d bytes): %v", len(body), r.ContentLength, err), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		r.TransferEncoding = nil
	}
	h := &cgi.Handler{
		Path: s.backend,
		Root: "/",
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.Root,
			"GIT_HTTP_EXPORT_ALL=1",
		},
		Stderr: s.devNull, // refused compare-and-swaps are expected in tests
	}
	h.ServeHTTP(w, r)
}

// ensureRepo creates a bare repository that accepts pushes, HEAD on main.
func (s *Server) ensureRepo(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "--bare", "-q", "-b", "main", dir},
		{"-C", dir, "config", "http.receivepack", "true"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// bodyDeadline bounds the time a request's body may take to arrive.
const bodyDeadline = 2 * time.Minute

func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("gitserver: response writer cannot hijack")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // RST instead of FIN
	}
	_ = conn.Close()
}
