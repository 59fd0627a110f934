package agent

import "github.com/memfsd/memfsd/retry"

// withFreshToken runs a network operation with the token file's token as
// of now, once more when the server refused it and the file had changed
// (credentials.Source.WithFreshToken); without a token file, just once.
func (a *Agent) withFreshToken(op func() error) error {
	if a.cfg.Credentials() == nil {
		return op()
	}
	return a.cfg.Credentials().WithFreshToken(a.log, op)
}

// RetryAuth asks for a sync at once when the last one failed as auth (the
// token changed: its file was fixed), so the agent's status does not keep
// the old error until the next turn. Only with Background (the loops).
func (a *Agent) RetryAuth() {
	a.mu.Lock()
	failed := a.lastErr != nil && a.lastErr.Class == string(retry.ClassAuth)
	a.mu.Unlock()
	if !failed || !a.Background || a.kick == nil {
		return
	}
	a.log.Info("the token changed after an auth failure: syncing again now")
	select {
	case a.kick <- struct{}{}:
	default:
	}
}
