package fence_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/fence"
	"github.com/locksmith-go/locksmith/internal/resp"
)

func TestMemory(t *testing.T) {
	var m fence.Memory
	steps := []struct {
		resource string
		token    uint64
		want     error
	}{
		{"a", 0, fence.ErrNoToken},
		{"a", 5, nil},
		{"a", 5, nil}, // the same holder writes again
		{"a", 4, fence.ErrStale},
		{"b", 1, nil}, // resources are independent
		{"a", 9, nil},
		{"a", 6, fence.ErrStale},
	}
	for i, s := range steps {
		if err := m.Accept(s.resource, s.token); !errors.Is(err, s.want) || (s.want == nil) != (err == nil) {
			t.Errorf("step %d: Accept(%q, %d) = %v, want %v", i, s.resource, s.token, err, s.want)
		}
	}
	if got := m.Highest("a"); got != 9 {
		t.Errorf("Highest(a) = %d, want 9", got)
	}
	if got := m.Highest("none"); got != 0 {
		t.Errorf("Highest(none) = %d, want 0", got)
	}
}

func TestMemoryDoIsAtomic(t *testing.T) {
	var m fence.Memory
	var writes []uint64
	var wg sync.WaitGroup
	for token := uint64(1); token <= 50; token++ {
		wg.Go(func() {
			m.Do("r", token, func() error {
				writes = append(writes, token)
				return nil
			})
		})
	}
	wg.Wait()
	for i := 1; i < len(writes); i++ {
		if writes[i] < writes[i-1] {
			t.Fatalf("write %d has token %d after token %d", i, writes[i], writes[i-1])
		}
	}
	if len(writes) == 0 || writes[len(writes)-1] != m.Highest("r") {
		t.Errorf("writes %v do not end at the highest token %d", writes, m.Highest("r"))
	}
	if got := m.Highest("r"); got != 50 {
		t.Errorf("Highest = %d, want 50, the largest token", got)
	}
	if err := m.Do("r", 1, func() error { t.Error("stale write ran"); return nil }); !errors.Is(err, fence.ErrStale) {
		t.Errorf("Do with a stale token = %v, want ErrStale", err)
	}
}

func TestScript(t *testing.T) {
	s := miniredis.RunT(t)
	rc := resp.Dial(s.Addr())
	defer rc.Close()
	ctx := context.Background()
	write := func(token, value string) (any, error) {
		return rc.Eval(ctx, fence.Script, []string{"{doc}:fence", "{doc}:body"}, []string{token, value})
	}
	steps := []struct {
		token, value string
		want         any
		wantBody     string
	}{
		{"3", "v3", int64(1), "v3"},
		{"3", "v3b", int64(1), "v3b"},
		{"2", "late", int64(0), "v3b"},
		{"10", "v10", int64(1), "v10"},
	}
	for i, st := range steps {
		got, err := write(st.token, st.value)
		if err != nil || got != st.want {
			t.Fatalf("step %d: write(%s) = %v, %v; want %v", i, st.token, got, err, st.want)
		}
		if body, _ := s.Get("{doc}:body"); body != st.wantBody {
			t.Errorf("step %d: body = %q, want %q", i, body, st.wantBody)
		}
	}
	for _, bad := range []string{"0", "-1", "x"} {
		if _, err := write(bad, "bad"); err == nil {
			t.Errorf("write with token %q succeeded", bad)
		}
	}
	if body, _ := s.Get("{doc}:body"); body != "v10" {
		t.Errorf("body after bad tokens = %q, want v10", body)
	}
}

// A nil write function or a nil *Memory is refused with ErrInvalidArgument,
// and nothing is recorded.
func TestMemoryRefusesBadInput(t *testing.T) {
	var m fence.Memory
	if err := m.Do("r", 1, nil); !errors.Is(err, fence.ErrInvalidArgument) {
		t.Errorf("Do with a nil write = %v, want ErrInvalidArgument", err)
	}
	if got := m.Highest("r"); got != 0 {
		t.Errorf("Highest after a refused Do = %d, want 0", got)
	}
	var nilMemory *fence.Memory
	if err := nilMemory.Accept("r", 1); !errors.Is(err, fence.ErrInvalidArgument) {
		t.Errorf("Accept of a nil *Memory = %v, want ErrInvalidArgument", err)
	}
	if err := nilMemory.Do("r", 1, func() error { return nil }); !errors.Is(err, fence.ErrInvalidArgument) {
		t.Errorf("Do of a nil *Memory = %v, want ErrInvalidArgument", err)
	}
	if got := nilMemory.Highest("r"); got != 0 {
		t.Errorf("Highest of a nil *Memory = %d, want 0", got)
	}
}

// A stale token's error names the resource, cut when it is long.
func TestMemoryStaleErrorCutsLongResources(t *testing.T) {
	var m fence.Memory
	long := strings.Repeat("r", 1<<16)
	if err := m.Accept(long, 2); err != nil {
		t.Fatal(err)
	}
	err := m.Accept(long, 1)
	if !errors.Is(err, fence.ErrStale) || len(err.Error()) > 200 {
		t.Errorf("Accept of a stale token = %d bytes: %.200v, want ErrStale with the resource cut", len(err.Error()), err)
	}
}
