package agent

// withFreshToken runs a network operation with the token file's token as
// of now, once more when the server refused it and the file had changed
// (credentials.Source.WithFreshToken); without a token file, just once.
func (a *Agent) withFreshToken(op func() error) error {
	if a.cfg.Credentials() == nil {
		return op()
	}
	return a.cfg.Credentials().WithFreshToken(a.log, op)
}
