package nodeset

import (
	"context"
	"testing"

	"github.com/locksmith-go/locksmith/driver"
)

type conn struct{ name string }

func (*conn) Eval(context.Context, string, []string, []string) (any, error)    { return nil, nil }
func (*conn) EvalSha(context.Context, string, []string, []string) (any, error) { return nil, nil }
func (*conn) ScriptLoad(context.Context, string) (string, error)               { return "", nil }

type named struct {
	conn
	id string
}

func (n *named) NodeID() string { return n.id }

// unhashable has a dynamic type == cannot compare.
type unhashable struct {
	*conn
	_ []int
}

func TestCheck(t *testing.T) {
	a, b := &conn{"a"}, &conn{"b"}
	var typedNil *conn
	tests := []struct {
		name  string
		conns []driver.Conn
		want  *Fault
	}{
		{"distinct", []driver.Conn{a, b}, nil},
		{"empty", nil, nil},
		{"nil", []driver.Conn{a, nil}, &Fault{Kind: NilConn, Node: 1}},
		{"typed nil", []driver.Conn{typedNil}, &Fault{Kind: NilConn, Node: 0}},
		{"same conn", []driver.Conn{a, b, a}, &Fault{Kind: SameConn, Node: 2, Other: 0}},
		{"same node id", []driver.Conn{&named{id: "x"}, &named{id: "y"}, &named{id: "x"}}, &Fault{Kind: SameNode, Node: 2, Other: 0, ID: "x"}},
		{"incomparable conns", []driver.Conn{unhashable{conn: a}, unhashable{conn: b}}, nil},
	}
	for _, tt := range tests {
		got := Check(tt.conns)
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("%s: Check = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
