package valkeygo_test

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	valkeylib "github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/compat/redsync/redis/valkeygo"
	lsvalkeygo "github.com/locksmith-go/locksmith/driver/valkeygo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ptrAdapter is an adapter behind a pointer, as valkeycompat's *Compat is.
type ptrAdapter struct{ client valkeylib.Client }

func (a *ptrAdapter) Client() valkeylib.Client { return a.client }

func TestNewPool(t *testing.T) {
	client, err := valkeylib.NewClient(valkeylib.ClientOption{
		InitAddress:       []string{miniredis.RunT(t).Addr()},
		DisableCache:      true,
		ForceSingleClient: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, ok := valkeygo.NewPool(adapter{client}).(*lsvalkeygo.Conn); !ok {
		t.Errorf("NewPool(adapter of a client) is not a *valkeygo.Conn of the driver module")
	}
	for name, delegate := range map[string]interface{ Client() valkeylib.Client }{
		"nil":               nil,
		"nil pointer":       (*ptrAdapter)(nil),
		"adapter of no one": adapter{},
		"pointer to no one": &ptrAdapter{},
	} {
		if pool := valkeygo.NewPool(delegate); pool != nil {
			t.Errorf("NewPool(%s) = %v, want nil", name, pool)
		}
	}
}
