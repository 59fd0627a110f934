package daemon

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
)

// IsTCP reports whether addr (a --listen value) is a TCP address rather
// than a unix socket.
func IsTCP(addr string) bool { return !strings.HasPrefix(addr, "unix://") }

// IsLoopback reports whether a TCP listen address binds only the loopback
// interface: "localhost", 127.0.0.0/8 or ::1. An empty host (":9999"), an
// unspecified one (0.0.0.0, ::) or any other name or address is reachable
// from the network.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// CheckListen refuses a TCP address reachable from the network unless the
// operator gave a credential for it (hasToken) or said insecure: the API
// hands out every agent's memory, and the admin one adds agents and
// mirrors memory anywhere. flag and tokenFlag (the token's file) name the
// flags for the message.
func CheckListen(flag, tokenFlag, addr string, hasToken, insecure bool) error {
	if !IsTCP(addr) || IsLoopback(addr) || hasToken || insecure {
		return nil
	}
	return fmt.Errorf("flag %s: %s is not a loopback address: anyone who can reach it would read and write every agent's memory; give a credential with %s (clients send it as Authorization: Bearer), listen on a unix socket or 127.0.0.1, or pass --insecure-listen to accept the risk", flag, addr, tokenFlag)
}

// ReadListenToken reads the API's bearer token from a file: surrounding
// white space is dropped; an empty token is refused.
func ReadListenToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read listen token: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", errors.New("read listen token: " + path + " is empty")
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", errors.New("read listen token: " + path + " holds more than one word")
	}
	return tok, nil
}

// RequireBearer answers 401 (a JSON error) to every request whose
// Authorization header is not "Bearer <token>", compared in constant time,
// and passes the others to h.
func RequireBearer(token string, h http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="memfsd"`)
			writeError(w, http.StatusUnauthorized, errors.New("unauthorized: this listener needs the token of --listen-token-file as Authorization: Bearer <token>"))
			return
		}
		h.ServeHTTP(w, r)
	})
}
