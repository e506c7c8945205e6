package driver

// MarkNoScript marks err, the server's NOSCRIPT error reply to an EVALSHA,
// so that it also matches [ErrNoScript], as [Conn.EvalSha] requires. The
// result has err's text and keeps err in its chain, so that errors.As
// still finds the client's own error type. Detect the reply with the
// client's own typed check where it has one, else by the NOSCRIPT prefix
// of its text. MarkNoScript(nil) is nil.
func MarkNoScript(err error) error {
	if err == nil {
		return nil
	}
	return noScriptError{err}
}

type noScriptError struct {
	err error
}

func (e noScriptError) Error() string { return e.err.Error() }

func (e noScriptError) Unwrap() []error { return []error{ErrNoScript, e.err} }
