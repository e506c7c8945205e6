package adapter

import (
	"errors"
	"sync"
	"time"
)

// Spare keeps the connection that a Conn's last call used for the Conn's
// next call, for a while, so that a call which finds it runs its command on
// the calling goroutine without going through the client's pool, whose dial
// or health check may not honour ctx (see [Run]): a connection in hand
// needs neither. A call takes it with Take, runs its command on it, and
// puts it back with Put once the command has succeeded on it; a call that
// finds none takes one from the client in Run's goroutine and puts that
// back.
//
// A Spare holds at most one connection, and gives it back to the client,
// with the function given to [NewSpare], once it has been kept unused for
// the Spare's keep time, and when [Spare.Release] is called. The client's
// own upkeep of idle connections (a pool's health check, idle timeout and
// maximum age) then does not see that connection for up to that time.
//
// A nil *Spare keeps nothing. A Spare's methods may be called concurrently.
type Spare[T any] struct {
	keep    time.Duration
	release func(T)

	mu    sync.Mutex
	conn  T
	held  bool
	since time.Time   // when conn was put
	timer *time.Timer // runs expire; nil until the first Put that kept one
	// expiring is closed once the release that expire is making returns;
	// nil while it makes none.
	expiring chan struct{}
}

// NewSpare returns a Spare that keeps a connection for up to keep after it
// was put and gives it back with release. keep must be positive and release
// not nil.
func NewSpare[T any](keep time.Duration, release func(T)) (*Spare[T], error) {
	if keep <= 0 {
		return nil, errors.New("adapter: a Spare's keep time must be positive")
	}
	if release == nil {
		return nil, errors.New("adapter: a Spare needs a release function")
	}
	return &Spare[T]{keep: keep, release: release}, nil
}

// Take returns the connection the Spare keeps, which is then the caller's,
// and true; or the zero T and false when it keeps none.
func (s *Spare[T]) Take() (conn T, ok bool) {
	if s == nil {
		return conn, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		return conn, false
	}
	conn, s.conn, s.held = s.conn, *new(T), false
	return conn, true
}

// Put offers conn, a connection whose last command succeeded, to the
// Spare, and reports whether the Spare kept it. It keeps none when it
// already keeps one; the caller then gives conn back to the client itself.
func (s *Spare[T]) Put(conn T) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		return false
	}
	s.conn, s.held, s.since = conn, true, time.Now()
	if s.timer == nil {
		s.timer = time.AfterFunc(s.keep, s.expire)
	} else {
		s.timer.Reset(s.keep)
	}
	return true
}

// expire gives back the connection the Spare keeps once it has kept it for
// the keep time. A timer that fired for a connection given back since
// finds none, or a later one kept for less time, for which Put has set the
// timer again.
func (s *Spare[T]) expire() {
	s.mu.Lock()
	if !s.held || time.Since(s.since) < s.keep {
		s.mu.Unlock()
		return
	}
	conn := s.conn
	s.conn, s.held = *new(T), false
	done := make(chan struct{})
	s.expiring = done
	s.mu.Unlock()
	s.release(conn)
	s.mu.Lock()
	if s.expiring == done {
		s.expiring = nil
	}
	s.mu.Unlock()
	close(done)
}

// Release gives back the connection the Spare keeps, if any, and waits for
// a release that the keep time's timer has begun, before it returns. An
// adapter's Wait calls it, so that a program that waits for a Conn before
// closing its client finds every connection given back. A later Put keeps
// a connection again.
func (s *Spare[T]) Release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	conn, held := s.conn, s.held
	s.conn, s.held = *new(T), false
	expiring := s.expiring
	s.mu.Unlock()
	if held {
		s.release(conn)
	}
	if expiring != nil {
		<-expiring
	}
}
