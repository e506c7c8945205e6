package drivertest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

const (
	concurrentCallers = 16
	callsPerCaller    = 30
)

// counterScript increments KEYS[1] and returns the key, ARGV[1] and the new
// count, so each caller can tell its own reply from anyone else's.
const counterScript = `return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[1])}`

// testConcurrency has each caller call Eval, EvalSha and ScriptLoad in
// turn: a reply delivered to the wrong caller, or a count out of order,
// fails the check.
func testConcurrency(t *testing.T, newConn func(t *testing.T) driver.Conn, _ config) {
	conn := newConn(t)
	ks := newKeyspace(t, conn)

	digest, err := conn.ScriptLoad(t.Context(), counterScript)
	if err != nil {
		t.Fatalf("ScriptLoad error: %v", err)
	}

	var wg sync.WaitGroup
	for caller := range concurrentCallers {
		key := ks.key(fmt.Sprintf("counter-%02d", caller))
		wg.Go(func() {
			for call := 1; call <= callsPerCaller; call++ {
				arg := fmt.Sprintf("caller %d call %d", caller, call)
				want := []any{key, arg, int64(call)}
				var got any
				var err error
				var method string
				switch call % 3 {
				case 0:
					method = "Eval"
					got, err = conn.Eval(t.Context(), counterScript, []string{key}, []string{arg})
				case 1:
					method = "EvalSha"
					got, err = conn.EvalSha(t.Context(), digest, []string{key}, []string{arg})
				case 2:
					method = "ScriptLoad then EvalSha"
					var loaded string
					loaded, err = conn.ScriptLoad(t.Context(), counterScript)
					if err == nil && loaded != digest {
						err = fmt.Errorf("ScriptLoad = %q, want %q", loaded, digest)
					}
					if err == nil {
						got, err = conn.EvalSha(t.Context(), loaded, []string{key}, []string{arg})
					}
				}
				if err != nil {
					t.Errorf("%s, %s: error: %v", arg, method, err)
					return
				}
				if !equalReply(got, want) {
					t.Errorf("%s, %s = %s, want %s", arg, method, describe(got), describe(want))
					return
				}
			}
		})
	}
	wg.Wait()
}
