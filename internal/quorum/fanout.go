package quorum

import (
	"context"
	"sync"
	"time"

	"github.com/locksmith-go/locksmith/driver/adapter"
)

// FanOut calls request once for every node index in [0, n), all at once,
// and returns when every call has returned. Each call gets a context that is
// done when ctx is done or timeout has passed since FanOut started, so one
// slow node costs at most timeout. request records its own result; calls for
// distinct nodes run in distinct goroutines and must not share state without
// synchronisation.
//
// Node 0 runs on the calling goroutine, so a single-node round starts no
// goroutine at all.
//
// When ctx can never end, the calls get a context that only the timeout
// ends (see adapter.WithTimeout): it is cancelled only after every call has
// returned. An adapter whose client applies that deadline itself then runs
// the call without a goroutine of its own, as the driver package documents.
func FanOut(ctx context.Context, n int, timeout time.Duration, request func(ctx context.Context, node int)) {
	// nodeCtx is never assigned again, so the goroutines' closures copy
	// it rather than share it through the heap.
	nodeCtx, cancel := adapter.WithTimeout(ctx, timeout)
	defer cancel()
	if n <= 1 {
		// Nothing to wait for: the WaitGroup below, which the closures
		// move to the heap, is not needed.
		if n == 1 {
			request(nodeCtx, 0)
		}
		return
	}
	var wg sync.WaitGroup
	wg.Add(n - 1)
	for node := 1; node < n; node++ {
		// A plain go statement allocates one closure per node where
		// WaitGroup.Go would allocate two.
		go func() {
			defer wg.Done()
			request(nodeCtx, node)
		}()
	}
	request(nodeCtx, 0)
	wg.Wait()
}
