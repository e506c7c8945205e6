package redigo_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver/redigo"
)

// infoScript holds the replies that the connections of infoPool give to
// INFO, one per INFO, and counts how often INFO was sent.
type infoScript struct {
	mu      sync.Mutex
	replies []infoReply
	asked   int
}

type infoReply struct {
	reply any
	err   error
}

func (s *infoScript) next() (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	if len(s.replies) == 0 {
		return nil, errors.New("infoScript: no reply left for INFO")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r.reply, r.err
}

func (s *infoScript) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// infoConn is a connection to a real server whose replies to INFO come
// from script instead.
type infoConn struct {
	redis.Conn
	script *infoScript
}

func (c infoConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	if cmd == "INFO" {
		return c.script.next()
	}
	return redis.DoContext(c.Conn, ctx, cmd, args...)
}

func (c infoConn) ReceiveContext(ctx context.Context) (any, error) {
	return redis.ReceiveContext(c.Conn, ctx)
}

// infoPool returns a pool whose connections reach the test server and
// answer INFO from script.
func infoPool(t *testing.T, script *infoScript) *redis.Pool {
	t.Helper()
	addr := testServer(t)
	return newPool(t, addr, func(p *redis.Pool) {
		p.DialContext = func(ctx context.Context) (redis.Conn, error) {
			conn, err := redis.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return infoConn{conn, script}, nil
		}
	})
}

const infoWithRunID = "# Server\r\nredis_version:7.0.15\r\nrun_id:5329b4dd105fbb7e8c059a11018eb79188b6915b\r\ntcp_port:6379\r\n"

// The Conn asks INFO server at the first call the server answers, keeps
// the run_id, and asks no more once it has it or the server gave none;
// after a passing error reply or a failed connection it asks again.
func TestServerID(t *testing.T) {
	const runID = "5329b4dd105fbb7e8c059a11018eb79188b6915b"
	tests := []struct {
		name      string
		replies   []infoReply
		want      string
		wantAsked int
	}{
		{"run_id", []infoReply{{reply: []byte(infoWithRunID)}}, runID, 1},
		{"no run_id", []infoReply{{reply: []byte("# Server\r\nredis_version:7.0.15\r\n")}}, "", 1},
		{"INFO refused", []infoReply{{err: redis.Error("NOPERM User locker has no permissions to run the 'info' command")}}, "", 1},
		{"not an INFO reply", []infoReply{{reply: int64(1)}}, "", 1},
		{"busy, then run_id", []infoReply{{err: redis.Error("BUSY Redis is busy running a script.")}, {reply: []byte(infoWithRunID)}}, runID, 2},
		{"broken connection, then run_id", []infoReply{{err: errors.New("connection reset")}, {reply: []byte(infoWithRunID)}}, runID, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := &infoScript{replies: tt.replies}
			conn := redigo.New(infoPool(t, script))
			if got, known := conn.ServerID(); got != "" || known {
				t.Errorf("ServerID before any call = %q, %v; want \"\", false", got, known)
			}
			for i := range 3 {
				if _, err := conn.Eval(context.Background(), "return 1", nil, nil); err != nil {
					t.Fatalf("Eval %d: %v", i, err)
				}
			}
			if got, known := conn.ServerID(); got != tt.want || !known {
				t.Errorf("ServerID after 3 calls = %q, %v; want %q, true", got, known, tt.want)
			}
			if asked := script.count(); asked != tt.wantAsked {
				t.Errorf("INFO sent %d times in 3 calls, want %d", asked, tt.wantAsked)
			}
		})
	}
}

// A command the server refuses is a contact with it too; a call that
// never reached it is not.
func TestServerIDAfterErrorReply(t *testing.T) {
	script := &infoScript{replies: []infoReply{{reply: []byte(infoWithRunID)}}}
	conn := redigo.New(infoPool(t, script))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := conn.Eval(ctx, "return 1", nil, nil); err == nil {
		t.Fatalf("Eval with a cancelled ctx succeeded")
	}
	if asked := script.count(); asked != 0 {
		t.Errorf("INFO sent %d times by a call whose ctx had ended, want 0", asked)
	}
	if _, err := conn.Eval(context.Background(), "return redis.error_reply('ERR refused')", nil, nil); err == nil {
		t.Fatalf("Eval of an error reply succeeded")
	}
	if got, known := conn.ServerID(); got == "" || !known {
		t.Errorf("ServerID after a call the server refused = %q, %v; want the run_id", got, known)
	}
}
