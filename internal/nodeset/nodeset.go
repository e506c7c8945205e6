// Package nodeset checks that a list of driver.Conns can serve as the
// independent nodes of a Redlock quorum.
package nodeset

import (
	"reflect"

	"github.com/locksmith-go/locksmith/driver"
)

// Kind says what is wrong with a node list.
type Kind int

const (
	// NilConn: Node is nil, or a typed nil that would fail on its first
	// call.
	NilConn Kind = iota + 1
	// SameConn: Node is the same Conn value as Other.
	SameConn
	// SameNode: Node and Other report the same driver.Identifier NodeID.
	SameNode
)

// Fault is the first problem found in a node list.
type Fault struct {
	Kind        Kind
	Node, Other int    // indexes into the list; Other only for SameConn and SameNode
	ID          string // the shared NodeID, for SameNode
}

// Check returns the first problem of conns, or nil. Counting one node
// twice would let fewer than a majority of real nodes form a quorum, so the
// same Conn given twice, or two Conns naming the same node, are faults.
func Check(conns []driver.Conn) *Fault {
	ids := make(map[string]int, len(conns))
	for i, conn := range conns {
		if IsNil(conn) {
			return &Fault{Kind: NilConn, Node: i}
		}
		for j := range i {
			if sameValue(conn, conns[j]) {
				return &Fault{Kind: SameConn, Node: i, Other: j}
			}
		}
		if idf, ok := conn.(driver.Identifier); ok {
			id := idf.NodeID()
			if j, dup := ids[id]; dup {
				return &Fault{Kind: SameNode, Node: i, Other: j, ID: id}
			}
			ids[id] = i
		}
	}
	return nil
}

// IsNil reports whether conn is nil or holds a nil pointer, map, slice,
// func, channel or interface.
func IsNil(conn driver.Conn) bool {
	if conn == nil {
		return true
	}
	v := reflect.ValueOf(conn)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// sameValue compares two Conns with == where their dynamic type allows it,
// since == on an incomparable type panics.
func sameValue(a, b driver.Conn) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}
