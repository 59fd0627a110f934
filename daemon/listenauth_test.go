package daemon

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckListen_NetworkAddressNeedsCredential(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		ok   bool // without a token or --insecure-listen
	}{
		{"unix:///tmp/m.sock", true},
		{"127.0.0.1:9999", true},
		{"127.3.4.5:9999", true},
		{"localhost:9999", true},
		{"[::1]:9999", true},
		{"[::ffff:127.0.0.1]:9999", true},
		{"0.0.0.0:9999", false},
		{":9999", false},
		{"[::]:9999", false},
		{"192.168.1.10:9999", false},
		{"example.com:9999", false},
	} {
		err := CheckListen("--listen", "--listen-token-file", tc.addr, false, false)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q) = %v, want ok %v", tc.addr, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--listen-token-file") {
			t.Errorf("CheckListen(%q) = %v, want it to name --listen-token-file", tc.addr, err)
		}
		if CheckListen("--listen", "--listen-token-file", tc.addr, true, false) != nil || CheckListen("--listen", "--listen-token-file", tc.addr, false, true) != nil {
			t.Errorf("CheckListen(%q) refused with a token or --insecure-listen", tc.addr)
		}
	}
}

func TestRequireBearer(t *testing.T) {
	t.Parallel()
	h := RequireBearer("s3cret", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	for _, tc := range []struct {
		auth string
		code int
	}{
		{"", 401},
		{"Bearer wrong", 401},
		{"Bearer s3cre", 401},
		{"Basic s3cret", 401},
		{"Bearer s3cret", 200},
	} {
		req := httptest.NewRequest("GET", "/v1/agents", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, rec.Code, tc.code)
		}
		if tc.code == 401 {
			var body struct{ Error string }
			if json.Unmarshal(rec.Body.Bytes(), &body) != nil || !strings.Contains(body.Error, "Bearer") {
				t.Errorf("Authorization %q: body %q, want a JSON error naming Bearer", tc.auth, rec.Body)
			}
		}
	}
}
