package redlock

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"weak"

	"github.com/locksmith-go/locksmith/internal/quorum"
)

// keyOrder orders one Client's successive locks on the same keys on each
// node. A round returns once a quorum has decided it, and the requests to
// the other nodes go on in the background; without this order, the next
// lock's request on such a node could overtake them and find the key still
// held, by a release not yet applied or by a grant applied late. Two such
// nodes, left by two earlier locks, would refuse a TryLock that nothing
// else contends. The lanes of every attempt on a key set share one
// quorum.Order, so an attempt's first request on a node is sent once the
// requests entered there before it by the other attempts and Locks on
// those keys have returned, each wait bounded by the per-node timeout.
//
// It holds each Order weakly: the lanes of the attempts and Locks on the
// keys hold it, and so does every request of theirs still running (its
// round holds its lanes), so an Order is forgotten only once nothing
// entered in it can still be running.
type keyOrder struct {
	mu      sync.Mutex
	orders  map[orderKey]weak.Pointer[quorum.Order]
	sweepAt int // size of orders at which forgotten ones are swept out
}

// orderKey names a set of keys in keyOrder: the key itself for one key,
// and for several the sorted keys, each prefixed by its length, so that a
// set has one name whatever the order its keys were given in, and
// distinct sets never share one.
type orderKey struct {
	multi bool
	name  string
}

// lanes returns the lanes for a new attempt (or Resume) on req's keys, in
// the Order of those keys.
func (o *keyOrder) lanes(req request) *quorum.Lanes {
	name := orderKey{name: req.names[0]}
	if len(req.names) > 1 {
		name = orderKey{multi: true, name: joinSorted(req.names)}
	}
	return o.lanesOf(name)
}

// lanesOf returns the lanes for a new attempt in the Order named name.
func (o *keyOrder) lanesOf(name orderKey) *quorum.Lanes {
	o.mu.Lock()
	defer o.mu.Unlock()
	if order := o.orders[name].Value(); order != nil {
		return quorum.NewLanes(order)
	}
	if o.orders == nil {
		o.orders = make(map[orderKey]weak.Pointer[quorum.Order])
	}
	sweep(o.orders, &o.sweepAt)
	order := new(quorum.Order)
	o.orders[name] = weak.Make(order)
	return quorum.NewLanes(order)
}

// joinSorted returns the keys of a multi-key request, sorted, each
// prefixed by its length.
func joinSorted(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, n := range sorted {
		b.WriteString(strconv.Itoa(len(n)))
		b.WriteByte(':')
		b.WriteString(n)
	}
	return b.String()
}
