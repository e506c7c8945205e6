package adapter_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/adapter"
)

// client stands in for the Redis client an adapter wraps. As with many
// clients, once it has sent a command it waits for the reply whatever
// becomes of ctx: this one answers EVAL only when reply is closed, and it
// knows no script.
type client struct {
	reply chan struct{}
}

func (c *client) Do(ctx context.Context, args ...string) (any, error) {
	switch strings.ToUpper(args[0]) {
	case "SCRIPT": // SCRIPT LOAD source
		digest := sha1.Sum([]byte(args[2]))
		return hex.EncodeToString(digest[:]), nil
	case "EVALSHA":
		return nil, errors.New("NOSCRIPT No matching script")
	}
	<-c.reply
	return "done", nil
}

// Conn is a minimal driver.Conn over client, which also implements
// driver.Waiter.
type Conn struct {
	client     *client
	background adapter.Background // the calls left running when their ctx ended
}

var (
	_ driver.Conn   = (*Conn)(nil)
	_ driver.Waiter = (*Conn)(nil)
)

// do sends one command through adapter.Run, so that it returns when ctx
// ends even though the client does not. A client that bounded every wait
// and socket read and write by ctx's deadline could skip the goroutine for
// the contexts that adapter.Inline reports:
//
//	if adapter.Inline(ctx) {
//		reply, err := c.client.Do(ctx, args...)
//		return reply, adapter.ContextErr(ctx, err)
//	}
func (c *Conn) do(ctx context.Context, args ...string) (any, error) {
	return adapter.Run(ctx, &c.background, func(ctx context.Context) (any, error) {
		return c.client.Do(ctx, args...)
	})
}

func scriptArgs(command, script string, keys, args []string) []string {
	cmd := append([]string{command, script, strconv.Itoa(len(keys))}, keys...)
	return append(cmd, args...)
}

func (c *Conn) Eval(ctx context.Context, script string, keys, args []string) (any, error) {
	return c.do(ctx, scriptArgs("EVAL", script, keys, args)...)
}

func (c *Conn) EvalSha(ctx context.Context, digest string, keys, args []string) (any, error) {
	reply, err := c.do(ctx, scriptArgs("EVALSHA", digest, keys, args)...)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return nil, adapter.NoScript(err)
	}
	return reply, err
}

func (c *Conn) ScriptLoad(ctx context.Context, script string) (string, error) {
	reply, err := c.do(ctx, "SCRIPT", "LOAD", script)
	if err != nil {
		return "", err
	}
	digest, ok := reply.(string)
	if !ok {
		return "", fmt.Errorf("SCRIPT LOAD replied %T, want a string", reply)
	}
	return digest, nil
}

// Wait implements driver.Waiter.
func (c *Conn) Wait(ctx context.Context) error {
	return c.background.Wait(ctx)
}

// A minimal adapter: every call returns when its ctx ends, a NOSCRIPT
// reply matches driver.ErrNoScript, and Wait waits for the calls that
// returned early.
func Example() {
	conn := &Conn{client: &client{reply: make(chan struct{})}}

	digest, err := conn.ScriptLoad(context.Background(), "return 'done'")
	fmt.Println(digest, err)
	_, err = conn.EvalSha(context.Background(), digest, nil, nil)
	fmt.Println(errors.Is(err, driver.ErrNoScript), err)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = conn.Eval(ctx, "return 'done'", nil, nil)
	fmt.Println(err)

	close(conn.client.reply) // the reply comes after all
	fmt.Println(conn.Wait(context.Background()))
	// Output:
	// cc8bfea1fd16d332e5c3c456fbc38468019611db <nil>
	// true NOSCRIPT No matching script
	// context deadline exceeded
	// <nil>
}
