package shared

// SetViewLeased makes f run each time unit u holds a view file's lease and
// compared it, right before it writes or removes the file.
func SetViewLeased(u *Unit, f func()) { u.viewLeased = f }
