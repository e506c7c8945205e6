package resp

import (
	"bufio"
	"context"
	"errors"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/locksmith-go/locksmith/driver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeServer answers each command with the canned raw reply for its name and
// records the arguments it received.
func fakeServer(t *testing.T, replies map[string]string) (addr string, received <-chan []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	got := make(chan []string, 16)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			args, err := readCommand(r)
			if err != nil {
				return
			}
			got <- args
			reply, ok := replies[args[0]]
			if !ok {
				continue // no answer: the client must give up on its own
			}
			if _, err := c.Write([]byte(reply)); err != nil {
				return
			}
		}
	}()
	return l.Addr().String(), got
}

func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		arg, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimSuffix(arg, "\r\n")
	}
	return args, nil
}

func TestDoNormalizesReplies(t *testing.T) {
	addr, received := fakeServer(t, map[string]string{
		"STATUS": "+OK\r\n",
		"INT":    ":-42\r\n",
		"BULK":   "$5\r\nhe\r\no\r\n",
		"NIL":    "$-1\r\n",
		"NILARR": "*-1\r\n",
		"ARR":    "*4\r\n:1\r\n$1\r\nx\r\n*1\r\n+nested\r\n$-1\r\n",
		"ERR":    "-NOSCRIPT No matching script\r\n",
		"EXEC":   "*2\r\n+OK\r\n-WRONGTYPE bad\r\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := DialWire(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	tests := []struct {
		cmd  string
		want any
	}{
		{"STATUS", "OK"},
		{"INT", int64(-42)},
		{"BULK", "he\r\no"},
		{"NIL", nil},
		{"NILARR", nil},
		{"ARR", []any{int64(1), "x", []any{"nested"}, nil}},
		{"EXEC", []any{"OK", &Error{Message: "WRONGTYPE bad"}}},
	}
	for _, tt := range tests {
		got, err := conn.Do(ctx, tt.cmd, "arg with space")
		if err != nil {
			t.Errorf("%s: %v", tt.cmd, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %#v, want %#v", tt.cmd, got, tt.want)
		}
		if args := <-received; !reflect.DeepEqual(args, []string{tt.cmd, "arg with space"}) {
			t.Errorf("server received %q", args)
		}
	}

	_, err = conn.Do(ctx, "ERR")
	var redisErr *Error
	if !errors.As(err, &redisErr) || redisErr.Message != "NOSCRIPT No matching script" {
		t.Errorf("ERR: err = %v, want *Error NOSCRIPT", err)
	}
	if !errors.Is(err, driver.ErrNoScript) {
		t.Errorf("ERR: errors.Is(%v, driver.ErrNoScript) = false, want true", err)
	}
	// The connection stays usable after an error reply.
	if got, err := conn.Do(ctx, "STATUS"); err != nil || got != "OK" {
		t.Errorf("STATUS after an error reply = %#v, %v", got, err)
	}
}

func TestDoReturnsWhenContextEnds(t *testing.T) {
	addr, _ := fakeServer(t, nil) // never answers
	conn, err := DialWire(context.Background(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = conn.Do(ctx, "PING")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Do after cancel: err = %v, want context.Canceled in the chain", err)
	}
}
