package drivertest

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/locksmith-go/locksmith/driver"
)

// cleanupTimeout bounds the key deletion at the end of a test, so a server
// that stopped answering cannot hang the test binary.
const cleanupTimeout = 10 * time.Second

// deleteKeysScript deletes every key in KEYS. It deletes them one at a time
// so that it also works on servers that refuse a multi-key DEL.
const deleteKeysScript = `
for _, key in ipairs(KEYS) do
  redis.call('DEL', key)
end
return #KEYS`

// A keyspace hands out key names that no other test uses and deletes them
// when the test ends.
type keyspace struct {
	prefix string

	mu   sync.Mutex
	used []string
}

// newKeyspace returns a keyspace whose keys are deleted through conn when t
// ends. Call it after newConn, so that the deletion runs before the cleanup
// that closes the client.
//
// All keys share one hash tag, so on a Redis Cluster they live in one slot
// and a script may use several of them at once.
func newKeyspace(t *testing.T, conn driver.Conn) *keyspace {
	t.Helper()
	ks := &keyspace{prefix: "{locksmith-drivertest-" + rand.Text() + "}:"}
	t.Cleanup(func() {
		ks.mu.Lock()
		keys := ks.used
		ks.mu.Unlock()
		if len(keys) == 0 {
			return
		}
		// The test's own context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := conn.Eval(ctx, deleteKeysScript, keys, nil); err != nil {
			t.Errorf("deleting the test's keys %q: %v", keys, err)
		}
	})
	return ks
}

// key returns the name of a key private to this test, built from name, and
// remembers it for deletion. It is safe for concurrent use.
func (ks *keyspace) key(name string) string {
	key := ks.prefix + name
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.used = append(ks.used, key)
	return key
}
