package gitmem_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/embedded"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/retry"
)

// The HTTP client is process-wide: these tests install short deadlines
// and put the defaults back.
func shortDeadlines(t *testing.T) {
	// 1.5 s, not less: the real git http-backend behind the test server
	// spawns git per request, which took over 300 ms under -race with the
	// suite's other packages beside it (load 26 on 2 cores).
	gitmem.InstallHTTPClient(gitmem.HTTPTimeouts{ResponseHeader: 1500 * time.Millisecond, Idle: 1500 * time.Millisecond})
	t.Cleanup(func() { gitmem.InstallHTTPClient(gitmem.DefaultHTTPTimeouts()) })
}

// Not parallel: it installs the process-wide HTTP client with short deadlines,
// which would cut other tests' fetches short.
func TestInstallHTTPClient(t *testing.T) {
	t.Run("SilentRemoteTimesOut", func(t *testing.T) {
		srv := gitserver.New(t, testToken)
		r := mustClone(t, srv, "silent")
		shortDeadlines(t)
		f := srv.AddFault(&gitserver.Fault{Count: -1, Hang: true})
		start := time.Now()
		_, err := r.Fetch(context.Background())
		if took := time.Since(start); err == nil || took > 10*time.Second {
			t.Fatalf("fetch from a silent remote: %v after %s", err, took)
		}
		if c := retry.ClassOf(err); c != retry.ClassRetryable {
			t.Fatalf("class = %s (%v), want retryable", c, err)
		}
		f.Release()
		srv.ClearFaults()
		gitmem.InstallHTTPClient(gitmem.DefaultHTTPTimeouts())
		if _, err := r.Fetch(context.Background()); err != nil {
			t.Fatalf("fetch after the remote answered again: %v", err)
		}
	})
	t.Run("SilentPackRequestIsRetryable", func(t *testing.T) {
		// The ref advertisement (GET) comes back; the pack request (POST)
		// gets no answer. go-git wraps a POST's transport error in an
		// UnexpectedError, which hid the timeout from the classifier.
		srv := gitserver.New(t, testToken)
		r := mustClone(t, srv, "quiet")
		peer := cliClone(t, srv, "quiet")
		writeFile(t, peer, "p.md", "from peer\n")
		git(t, peer, "add", "p.md")
		git(t, peer, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "peer")
		git(t, peer, "push", "-q", "origin", "HEAD:main")
		shortDeadlines(t)
		f := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/quiet/state.git/git-upload-pack", Count: -1, Hang: true})
		start := time.Now()
		_, err := r.Fetch(context.Background())
		if took := time.Since(start); err == nil || took > 10*time.Second {
			t.Fatalf("fetch with a silent pack request: %v after %s", err, took)
		}
		if c := retry.ClassOf(err); c != retry.ClassRetryable || f.Hits.Load() != 1 {
			t.Fatalf("class = %s (%v) after %d held requests, want retryable after 1", c, err, f.Hits.Load())
		}
		f.Release()
		srv.ClearFaults()
		gitmem.InstallHTTPClient(gitmem.DefaultHTTPTimeouts())
		if _, err := r.Fetch(context.Background()); err != nil {
			t.Fatalf("fetch after the remote answered again: %v", err)
		}
	})
	t.Run("BodyStallsMidway", func(t *testing.T) {
		stall := make(chan struct{})
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			w.WriteHeader(200)
			w.Write([]byte("001e# service=git-upload-pack\n"))
			w.(http.Flusher).Flush()
			select { // headers sent, then nothing
			case <-stall:
			case <-r.Context().Done():
			}
		}))
		defer ts.Close()
		defer close(stall)
		r := mustClone(t, gitserver.New(t, testToken), "x")
		shortDeadlines(t)
		r.Remote = gitmem.Remote{URL: ts.URL + "/stalled.git"}
		start := time.Now()
		_, err := r.Fetch(context.Background())
		if took := time.Since(start); err == nil || took > 10*time.Second {
			t.Fatalf("fetch from a stalling body: %v after %s", err, took)
		}
		if c := retry.ClassOf(err); c != retry.ClassRetryable {
			t.Fatalf("class = %s (%v), want retryable", c, err)
		}
	})
	t.Run("UntrustedCertificateIsPermanent", func(t *testing.T) {
		ts := httptest.NewTLSServer(http.NotFoundHandler()) // self-signed
		defer ts.Close()
		r := mustClone(t, gitserver.New(t, testToken), "tls")
		r.Remote = gitmem.Remote{URL: ts.URL + "/v1/git/tls/state.git"}
		attempts := 0
		out, err := retry.Do(context.Background(), retry.DefaultPolicy(), "fetch tls", func(ctx context.Context) error {
			attempts++
			_, err := r.Fetch(ctx)
			return err
		})
		if retry.ClassOf(err) != retry.ClassPermanent || out.Attempts != 1 || attempts != 1 {
			t.Fatalf("self-signed certificate: class %s after %d attempts: %v", retry.ClassOf(err), out.Attempts, err)
		}
	})
	t.Run("InstallBesideSyncs", func(t *testing.T) {
		// A daemon installs its client at start and adds embedded agents
		// at run time while others fetch: neither may write go-git's
		// transport map under a running fetch (go test -race failed
		// TestReconcile_* when the embedded transport went in on first use).
		srv := gitserver.New(t, testToken)
		r := mustClone(t, srv, "beside")
		bare := filepath.Join(t.TempDir(), "remote", "state.git")
		e, err := gitmem.Clone(context.Background(), filepath.Join(t.TempDir(), "memory"), gitmem.Remote{URL: embedded.URL(bare)}, gitmem.Options{Author: testAuthor})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 20; i++ {
				gitmem.InstallHTTPClient(gitmem.DefaultHTTPTimeouts())
				_ = embedded.URL(bare)
			}
		}()
		for i := 0; i < 5; i++ {
			if _, err := r.Fetch(context.Background()); err != nil {
				t.Fatalf("fetch over HTTP while the client is installed: %v", err)
			}
			if _, err := e.Fetch(context.Background()); err != nil {
				t.Fatalf("fetch from the embedded remote: %v", err)
			}
		}
		<-done
	})
}

func TestDo_RetryAfterCappedAtTheBudget(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "later")
	srv.AddFault(&gitserver.Fault{Count: -1, Status: 503, Header: http.Header{"Retry-After": {"3600"}}})
	p := retry.Policy{Initial: 10 * time.Millisecond, Multiplier: 2, Max: 50 * time.Millisecond, Budget: 2 * time.Second}
	start := time.Now()
	out, err := retry.Do(context.Background(), p, "fetch", func(ctx context.Context) error {
		_, err := r.Fetch(ctx)
		return err
	})
	if took := time.Since(start); took > 10*time.Second || retry.ClassOf(err) != retry.ClassRetryable {
		t.Fatalf("Retry-After: 3600 with a 2 s budget: %v after %s (%d attempts)", err, took, out.Attempts)
	}
}

func TestDo_CallerCancelNotRetried(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "cancel")
	srv.AddFault(&gitserver.Fault{Count: -1, Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	out, err := retry.Do(ctx, retry.DefaultPolicy(), "fetch", func(ctx context.Context) error {
		_, err := r.Fetch(ctx)
		return err
	})
	if took := time.Since(start); err == nil || took > 10*time.Second || out.Attempts != 1 {
		t.Fatalf("cancelled: %v after %s, %d attempts", err, took, out.Attempts)
	}
	if !errors.Is(err, context.Canceled) {
		t.Logf("error after cancel: %v", err)
	}
}
