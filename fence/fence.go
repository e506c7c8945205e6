// Package fence is the protected resource's side of fencing tokens: it
// accepts a write only if the writer's token is at least the highest it
// has accepted before.
//
// A lock alone cannot stop a holder that was paused (a GC pause, a swapped
// out process, a slow network) past its lock's validity from writing after
// the next holder has started. With redlock.WithFencing every lock carries
// a token that grows with each acquisition of the resource; if the resource
// rejects tokens lower than one it has seen, the late write is refused.
//
// [Memory] is a fence kept in process memory, for tests and for resources
// that live in one process. [Script] does the same check inside Redis,
// atomically with the write it guards.
package fence

import (
	"errors"
	"fmt"
	"sync"

	"github.com/locksmith-go/locksmith/internal/keytext"
)

// ErrStale is returned for a token lower than the highest one accepted for
// the same resource: its lock has been superseded.
var ErrStale = errors.New("fence: stale token")

// ErrNoToken is returned for token 0, which is what an unfenced lock
// reports.
var ErrNoToken = errors.New("fence: token 0 is not a fencing token")

// ErrInvalidArgument is returned for a call that cannot be carried out as
// made: on a nil *Memory, or Do with a nil write function. Nothing is
// recorded then.
var ErrInvalidArgument = errors.New("fence: invalid argument")

// Memory is an in-memory fence over any number of resources. The zero
// value is ready to use and safe for concurrent use.
type Memory struct {
	mu      sync.Mutex
	highest map[string]uint64
}

// Accept records token for resource if it is at least the highest token
// accepted for it, and reports ErrStale otherwise. A holder may write any
// number of times with the same token. Check and record are one atomic
// step, so run the guarded write while no other Accept of the resource can
// interleave (for example under the same mutex), or use Do.
func (m *Memory) Accept(resource string, token uint64) error {
	if m == nil {
		return fmt.Errorf("%w: Accept of a nil *Memory", ErrInvalidArgument)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acceptLocked(resource, token)
}

// Do runs write if token is accepted for resource, holding the fence's
// mutex so that no write with another token interleaves. A nil write is
// refused with ErrInvalidArgument before the token is looked at.
func (m *Memory) Do(resource string, token uint64, write func() error) error {
	switch {
	case m == nil:
		return fmt.Errorf("%w: Do of a nil *Memory", ErrInvalidArgument)
	case write == nil:
		return fmt.Errorf("%w: nil write function", ErrInvalidArgument)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.acceptLocked(resource, token); err != nil {
		return err
	}
	return write()
}

func (m *Memory) acceptLocked(resource string, token uint64) error {
	if token == 0 {
		return ErrNoToken
	}
	if highest := m.highest[resource]; token < highest {
		return fmt.Errorf("%w: %d is below %d, already accepted for %s", ErrStale, token, highest, keytext.Quote(resource))
	}
	if m.highest == nil {
		m.highest = make(map[string]uint64)
	}
	m.highest[resource] = token
	return nil
}

// Highest returns the highest token accepted for resource, or 0; 0 also
// for a nil *Memory.
func (m *Memory) Highest(resource string) uint64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.highest[resource]
}

// Script is a Lua script that guards a write to a Redis key with a fence
// kept in another key of the same hash slot, for resources stored in
// Redis. Run it with EVAL (or EVALSHA after SCRIPT LOAD):
//
//	KEYS[1]: the fence key, holding the highest token accepted
//	KEYS[2]: the key to write
//	ARGV[1]: the writer's token, a decimal integer above 0
//	ARGV[2]: the value to write to KEYS[2]
//
// It returns 1 when the token was accepted and the value written, and 0
// when the token is stale, in which case nothing is written. Tokens are
// compared as Lua numbers, exact up to 2^53.
const Script = `
local token = tonumber(ARGV[1])
if token == nil or token < 1 then
  return redis.error_reply('fence: token must be a positive integer')
end
local highest = tonumber(redis.call('GET', KEYS[1]) or '0')
if token < highest then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
`
