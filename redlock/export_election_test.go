package redlock

// SetGrantHook makes every campaign of e call hook with the lock it was
// granted, before the lock's renewal starts: for tests that pause a
// candidate there.
func SetGrantHook(e *Election, hook func(*Lock)) { e.granted = hook }
