package quorum

import (
	"context"
	"sync"
	"time"
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
func FanOut(ctx context.Context, n int, timeout time.Duration, request func(ctx context.Context, node int)) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	if n > 1 {
		wg.Add(n - 1)
	}
	for node := 1; node < n; node++ {
		// A plain go statement allocates one closure per node where
		// WaitGroup.Go would allocate two.
		go func() {
			defer wg.Done()
			request(ctx, node)
		}()
	}
	if n > 0 {
		request(ctx, 0)
	}
	wg.Wait()
}
