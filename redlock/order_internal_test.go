package redlock

import (
	"runtime"
	"testing"
)

// A key set given in another order is the same set: its attempts share
// one Order.
func TestKeyOrderNamesASetOnce(t *testing.T) {
	var o keyOrder
	l1 := o.lanes(request{names: []string{"x", "y"}})
	l2 := o.lanes(request{names: []string{"y", "x"}})
	l3 := o.lanes(request{names: []string{"2:x", "y"}})
	if len(o.orders) != 2 {
		t.Errorf("keyOrder has %d Orders for {x, y} twice and {2:x, y}, want 2", len(o.orders))
	}
	runtime.KeepAlive(l1)
	runtime.KeepAlive(l2)
	runtime.KeepAlive(l3)
}
