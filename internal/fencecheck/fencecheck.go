// Package fencecheck checks the two properties of fencing tokens over a
// history of grants, and drives a randomized history for tests.
//
//	P1: a grant that started after another returned has a larger token;
//	P2: no two grants of a resource share a token.
//
// The root module's tests run it over in-process nodes, the integration
// tests over real servers.
package fencecheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Grant is one successful acquisition of a resource: when the call started
// and returned, on the process's monotonic clock, and its token.
type Grant struct {
	Start, End time.Time
	Token      uint64
}

// Check returns a description of every violation of P1 and P2 among the
// grants of one resource.
func Check(grants []Grant) []string {
	var violations []string
	byEnd := slices.Clone(grants)
	slices.SortFunc(byEnd, func(a, b Grant) int { return a.End.Compare(b.End) })
	byStart := slices.Clone(grants)
	slices.SortFunc(byStart, func(a, b Grant) int { return a.Start.Compare(b.Start) })
	// Walk the grants by start; ended counts those that returned before
	// the current one started, and highest is the largest of their tokens.
	var highest uint64
	ended := 0
	for _, g := range byStart {
		for ended < len(byEnd) && byEnd[ended].End.Before(g.Start) {
			highest = max(highest, byEnd[ended].Token)
			ended++
		}
		if ended > 0 && g.Token <= highest {
			violations = append(violations, fmt.Sprintf("P1: token %d started after token %d returned", g.Token, highest))
		}
	}
	seen := make(map[uint64]int, len(grants))
	for _, g := range grants {
		seen[g.Token]++
	}
	for token, n := range seen {
		if n > 1 {
			violations = append(violations, fmt.Sprintf("P2: token %d handed out %d times", token, n))
		}
	}
	return violations
}

// Acquirer takes a fenced lock on resource and returns its token and a
// function that releases it.
type Acquirer func(ctx context.Context, resource string) (token uint64, release func(), err error)

// Run is a randomized history of fenced grants.
type Run struct {
	// Resources are the resources locked; each gets Workers goroutines.
	Resources []string
	Workers   int
	// Grants is how many grants to collect over all resources.
	Grants int
	// Seed makes the workers' and Tick's random choices repeatable.
	Seed uint64
	// Tick, if set, runs every TickEvery on its own goroutine, typically
	// to inject faults; it is called once more with stop true at the
	// end, to clear them.
	Tick      func(rng *rand.Rand, stop bool)
	TickEvery time.Duration
	// Abandon is the share of grants whose holder never releases, so the
	// lock must expire.
	Abandon float64
}

// Collect runs the history and returns the grants of each resource. It
// returns early with the first error that fatal reports true for.
func (r Run) Collect(acquire Acquirer, fatal func(error) bool) (map[string][]Grant, error) {
	var mu sync.Mutex
	grants := make(map[string][]Grant, len(r.Resources))
	count := 0
	done := make(chan struct{})
	var stop sync.Once
	finish := func() { stop.Do(func() { close(done) }) }
	var firstErr error

	var wg sync.WaitGroup
	if r.Tick != nil {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(r.Seed, 0))
			tick := time.NewTicker(r.TickEvery)
			defer tick.Stop()
			for {
				select {
				case <-done:
					r.Tick(rng, true)
					return
				case <-tick.C:
					r.Tick(rng, false)
				}
			}
		})
	}
	for ri, resource := range r.Resources {
		for w := range r.Workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(r.Seed, uint64(ri*r.Workers+w+1)))
				for {
					select {
					case <-done:
						return
					default:
					}
					start := time.Now()
					token, release, err := acquire(context.Background(), resource)
					end := time.Now()
					if err != nil {
						if fatal(err) {
							mu.Lock()
							if firstErr == nil {
								firstErr = err
							}
							mu.Unlock()
							finish()
							return
						}
						continue
					}
					mu.Lock()
					grants[resource] = append(grants[resource], Grant{Start: start, End: end, Token: token})
					count++
					if count >= r.Grants {
						finish()
					}
					mu.Unlock()
					if rng.Float64() >= r.Abandon {
						release()
					}
				}
			})
		}
	}
	wg.Wait()
	return grants, firstErr
}
