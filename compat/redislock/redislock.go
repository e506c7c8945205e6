package redislock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/internal/nodeset"
	"github.com/locksmith-go/locksmith/internal/scripts"
)

var (
	// ErrNotObtained is returned by Obtain when the key is held by another
	// owner and the retry strategy ended the tries, and by Refresh when the
	// lock is no longer held. When the context ends the tries of Obtain,
	// it returns ctx.Err() instead, as bsm/redislock does.
	ErrNotObtained = errors.New("redislock: not obtained")

	// ErrLockNotHeld is returned by Release, and by TTL of a nil Lock,
	// when the lock is no longer held: it expired, was released, or
	// belongs to another owner.
	ErrLockNotHeld = errors.New("redislock: lock not held")
)

// RedisClient is the go-redis client a Client sends its scripts through,
// as in bsm/redislock: a *redis.Client, *redis.ClusterClient or any other
// redis.Scripter that runs each command when called (a redis.Pipeliner
// will not do), but a *redis.Ring (see the differences in the package
// documentation).
type RedisClient interface {
	redis.Scripter
}

// Client obtains locks on one Redis server (or one Cluster or Sentinel
// deployment addressed through one client). It is safe for concurrent use
// and owns nothing: the client given to New stays the caller's to close.
type Client struct {
	node *scripts.Node
}

// New returns a Client that sends its scripts through client. It does no
// I/O. A nil client is reported by every call that would use it.
func New(client RedisClient) *Client {
	return NewFromConn(goredis.New(client))
}

// NewFromConn returns a Client that sends its scripts through conn, any
// locksmith driver.Conn: for example redigo.New(pool) or
// rueidis.New(client) of locksmith's adapters, for a program that does not
// use go-redis. It does no I/O. A nil conn is reported by every call that
// would use it.
func NewFromConn(conn driver.Conn) *Client {
	if nodeset.IsNil(conn) {
		return &Client{}
	}
	return &Client{node: scripts.NewNode(conn)}
}

// Obtain is a shortcut for New(client).Obtain(ctx, key, ttl, opt). A Client
// kept across calls sends less: it remembers which scripts the server has
// loaded.
func Obtain(ctx context.Context, client RedisClient, key string, ttl time.Duration, opt *Options) (*Lock, error) {
	return New(client).Obtain(ctx, key, ttl, opt)
}

// ObtainMulti is a shortcut for New(client).ObtainMulti(ctx, keys, ttl,
// opt).
func ObtainMulti(ctx context.Context, client RedisClient, keys []string, ttl time.Duration, opt *Options) (*Lock, error) {
	return New(client).ObtainMulti(ctx, keys, ttl, opt)
}

// Obtain takes a lock on key for ttl, which must be at least 1ms; it is
// used in whole milliseconds. The key is set to the lock's token followed
// by opt.Metadata.
//
// When the key holds another owner's value, Obtain waits as opt's
// RetryStrategy says (by default it does not retry) and tries again, until
// the strategy stops or ctx ends; a ctx without a deadline gets one ttl
// from now, so the tries cannot go on forever. It then returns
// ErrNotObtained when the strategy stopped, and ctx.Err() itself (such as
// context.DeadlineExceeded) when ctx ended the tries, as bsm/redislock
// does. When the key already holds a value that starts with opt.Token, the
// lock is taken again: its value and TTL are replaced. An error of the
// server or the connection ends the tries and is returned as it is, or as
// ctx.Err() itself when it came from the end of ctx.
//
// A try that failed may still have set the key on the server (its reply was
// lost, or ctx ended after the command was written). Unless opt.Token was
// given, Obtain then deletes the key if it holds the value it tried to
// store, before returning the error, so the key is not left held under a
// token nobody knows; this release is not cancelled with ctx and waits at
// most a second (less for a shorter ttl). With opt.Token the key is left
// as it is: it may be the caller's lock from an earlier Obtain, and the
// caller can take it again with the token.
func (c *Client) Obtain(ctx context.Context, key string, ttl time.Duration, opt *Options) (*Lock, error) {
	return c.ObtainMulti(ctx, []string{key}, ttl, opt)
}

// ObtainMulti takes one lock over several keys, all or none: if any key is
// held by another owner, no key is touched and Obtain's retries apply. The
// keys must be distinct; on a Redis Cluster they must hash to one slot
// (give them a common hash tag, as in "{order:42}:payment"). Everything
// else is as for Obtain.
func (c *Client) ObtainMulti(ctx context.Context, keys []string, ttl time.Duration, opt *Options) (*Lock, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	ttlArg, err := ttlArgument(ttl)
	if err != nil {
		return nil, err
	}
	token := opt.getToken()
	drawn := token == ""
	if drawn {
		if token, err = randomToken(); err != nil {
			return nil, fmt.Errorf("redislock: making a token: %w", err)
		}
	}
	value := token + opt.getMetadata()
	keys = append([]string(nil), keys...)
	args := []string{value, strconv.Itoa(len(token)), ttlArg}

	mayHaveApplied := false
	err = withRetry(ctx, ttl, opt.getRetryStrategy(), func(ctx context.Context) (bool, error) {
		reply, err := c.node.Run(ctx, obtainScript, keys, args)
		switch {
		case err != nil && ended(ctx):
			mayHaveApplied = true
			return true, ctxErr(ctx)
		case err != nil:
			// A broken server or connection rarely heals within a TTL.
			mayHaveApplied = true
			return true, err
		case reply == int64(1):
			return true, nil
		case reply == int64(0):
			return false, nil
		}
		return true, unexpected(reply)
	})
	if err != nil {
		if mayHaveApplied && drawn {
			c.releaseFailed(ctx, keys, value, ttl)
		}
		return nil, err
	}
	l := &Lock{Client: c, keys: keys, value: value, tokenLen: len(token)}
	l.ttl.Store(int64(ttl))
	return l, nil
}

// failedReleaseTimeout bounds the release sent after a failed Obtain (see
// releaseFailed): long enough for a round trip to a loaded server, short
// enough that a caller whose context ended is not kept waiting long.
const failedReleaseTimeout = time.Second

// releaseFailed deletes the keys that hold value after an Obtain whose
// script may have run on the server although no reply said so (the reply
// was lost, or ctx ended after the command was written): otherwise the key
// would stay for its whole TTL under a token the caller never learned, and
// refuse the caller's own retry. Like Release, it is not cancelled with
// ctx; it is bounded by ttl or failedReleaseTimeout, whichever is shorter,
// so that a server that stopped answering does not hold Obtain for a whole
// TTL. Its own failure leaves the key to expire, and Obtain reports the
// error that ended it either way.
func (c *Client) releaseFailed(ctx context.Context, keys []string, value string, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(ttl, failedReleaseTimeout))
	defer cancel()
	_, _ = c.node.Run(ctx, releaseScript, keys, []string{value})
}

// withRetry calls attempt until it reports done, the retry strategy stops,
// or ctx ends. attempt returns done=false to be retried, with a non-nil err
// when the try failed for a reason worth reporting. Once the strategy
// stops, withRetry returns the last such err, or ErrNotObtained; when ctx
// ends, the last such err joined with ctx.Err(), or ctx.Err() itself. A
// ctx without a deadline gets one limit from now, so an endless strategy
// still ends.
func withRetry(ctx context.Context, limit time.Duration, retry RetryStrategy, attempt func(context.Context) (done bool, err error)) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	var (
		lastErr error
		timer   *time.Timer
	)
	for {
		done, err := attempt(ctx)
		if done {
			return err
		}
		if err != nil {
			lastErr = err
		}
		backoff := retry.NextBackoff()
		if backoff < 1 {
			if lastErr != nil {
				return lastErr
			}
			return ErrNotObtained
		}
		if timer == nil {
			timer = time.NewTimer(backoff)
			defer timer.Stop()
		} else {
			timer.Reset(backoff)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			if lastErr == nil {
				return ctx.Err()
			}
			return errors.Join(lastErr, ctx.Err())
		}
	}
}

// ctxErr returns ctx.Err(), or context.DeadlineExceeded when ctx's
// deadline has passed but ctx does not report it yet (see ended).
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

// ended reports whether ctx is done or its deadline has passed: a
// connection that turns the deadline into a socket timeout can fail a
// moment before ctx itself reports it.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

func (c *Client) check(ctx context.Context) error {
	if c == nil || c.node == nil {
		return errors.New("redislock: no connection: the Client was not made by New or NewFromConn with a non-nil client")
	}
	if ctx == nil {
		return errors.New("redislock: nil Context")
	}
	return nil
}

func checkKeys(keys []string) error {
	if len(keys) == 0 {
		return errors.New("redislock: no keys to lock")
	}
	for i, key := range keys {
		for _, prev := range keys[:i] {
			if prev == key {
				return fmt.Errorf("redislock: key %q given twice", key)
			}
		}
	}
	return nil
}

func ttlArgument(ttl time.Duration) (string, error) {
	if ttl < time.Millisecond {
		return "", fmt.Errorf("redislock: ttl %v is below 1ms, the resolution of key expiry", ttl)
	}
	return strconv.FormatInt(ttl.Milliseconds(), 10), nil
}

// randomToken makes a token in the format bsm/redislock uses: 16 bytes
// from crypto/rand in unpadded URL-safe base64 (22 characters).
func randomToken() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

func unexpected(reply any) error {
	return fmt.Errorf("redislock: unexpected reply %#v", reply)
}

// Options describe how to obtain or refresh a lock. A nil *Options is
// valid and means the defaults.
type Options struct {
	// RetryStrategy chooses whether and when to try again. Obtain retries
	// while the key is held by another owner; Refresh retries after an
	// error of the server or connection. Default: NoRetry().
	RetryStrategy RetryStrategy

	// Metadata is stored in the key after the token and returned by
	// Lock.Metadata. Default: none.
	Metadata string

	// Token identifies the lock's owner; it is stored at the start of the
	// key's value. Obtain with the Token of a lock still held takes that
	// lock again. Default: 16 random bytes, base64-encoded (22
	// characters). A custom token must be as hard to guess: whoever knows
	// it can take over the lock.
	Token string
}

func (o *Options) getMetadata() string {
	if o == nil {
		return ""
	}
	return o.Metadata
}

func (o *Options) getToken() string {
	if o == nil {
		return ""
	}
	return o.Token
}

func (o *Options) getRetryStrategy() RetryStrategy {
	if o == nil || o.RetryStrategy == nil {
		return NoRetry()
	}
	return o.RetryStrategy
}
