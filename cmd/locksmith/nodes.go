package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/driver/goredis"
	"github.com/locksmith-go/locksmith/redlock"
)

// connOptions are the flags and environment that say how to reach the
// nodes.
type connOptions struct {
	urls          []string // --nodes, or LOCKSMITH_NODES split at commas
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
	passwordFile  string
	password      string // LOCKSMITH_PASSWORD
}

// node is one Redis node: its client, the Conn that wraps it, and a name
// for output that holds no credentials.
type node struct {
	name   string // host:port, or host:port/db for a database other than 0
	client *redis.Client
	conn   driver.Conn
}

type nodeList []*node

func (ns nodeList) conns() []driver.Conn {
	conns := make([]driver.Conn, len(ns))
	for i, n := range ns {
		conns[i] = n.conn
	}
	return conns
}

func (ns nodeList) close() {
	for _, n := range ns {
		n.client.Close()
	}
}

// closeAfter closes client, then the nodes' clients: a call returns as
// soon as a quorum decided it, and the requests to the other nodes (a
// release, say) must still reach them before the command exits. Each is
// bounded by the per-node timeout.
func closeAfter(client *redlock.Client, ns nodeList) {
	_ = client.Close(context.Background()) // Background never ends
	ns.close()
}

// dialTimeout bounds the connection to a node; each request is bounded
// further by the per-node timeout of the lock.
const dialTimeout = 2 * time.Second

// connect builds a client per node URL. It does no I/O. Every password it
// learns is added to *secrets before anything can fail, so that the caller
// can keep them out of every message.
func (o connOptions) connect(secrets *[]string) (nodeList, error) {
	*secrets = append(*secrets, o.password)
	if len(o.urls) == 0 {
		return nil, errors.New("no nodes: give --nodes or LOCKSMITH_NODES, as redis://host:port URLs")
	}
	password := o.password
	if o.passwordFile != "" {
		b, err := os.ReadFile(o.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("password file: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
		*secrets = append(*secrets, password)
	}
	tlsConfig, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	var nodes nodeList
	for i, raw := range o.urls {
		opts, name, err := parseNodeURL(raw, secrets)
		if err != nil {
			nodes.close()
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		if opts.TLSConfig != nil {
			c := tlsConfig.Clone()
			if c.ServerName == "" {
				c.ServerName = opts.TLSConfig.ServerName
			}
			opts.TLSConfig = c
		} else if o.tlsFlagsGiven() {
			nodes.close()
			return nil, fmt.Errorf("node %d (%s): TLS flags given for a redis:// URL; use rediss://", i, name)
		}
		if opts.Password == "" {
			opts.Password = password
		}
		opts.ContextTimeoutEnabled = true
		opts.DialTimeout = dialTimeout
		// The per-node timeout of each request bounds the client's own
		// retries; a lock round is never retried behind locksmith's back.
		opts.MaxRetries = -1
		opts.DialerRetries = 1 // one dial per request, no back-off
		client := redis.NewClient(opts)
		nodes = append(nodes, &node{name: name, client: client, conn: goredis.New(client)})
	}
	return nodes, nil
}

// parseNodeURL parses a redis:// or rediss:// URL. Its errors never show
// the URL's user information.
func parseNodeURL(raw string, secrets *[]string) (*redis.Options, string, error) {
	if at := strings.LastIndexByte(raw, '@'); at >= 0 {
		// Whatever lies between the scheme and the last '@' may be a
		// password, even in a URL that fails to parse.
		userinfo := raw[:at]
		if i := strings.Index(userinfo, "://"); i >= 0 {
			userinfo = userinfo[i+3:]
		}
		if _, pw, ok := strings.Cut(userinfo, ":"); ok {
			*secrets = append(*secrets, pw)
			if dec, err := url.PathUnescape(pw); err == nil {
				*secrets = append(*secrets, dec)
			}
		}
	}
	if !strings.Contains(raw, "://") {
		// host:port, the demo's other form, parses as a scheme or fails
		// with a parser message that names no fix.
		return nil, "", errors.New("not a URL: write redis://host:port (rediss:// for TLS)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return nil, "", fmt.Errorf("invalid URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, "", fmt.Errorf("URL scheme %q: want redis:// or rediss://", u.Scheme)
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return nil, "", fmt.Errorf("invalid URL: %w", err)
	}
	*secrets = append(*secrets, opts.Password)
	name := opts.Addr
	if opts.DB != 0 {
		name = fmt.Sprintf("%s/%d", name, opts.DB)
	}
	return opts, name, nil
}

func (o connOptions) tlsFlagsGiven() bool {
	return o.tlsCA != "" || o.tlsCert != "" || o.tlsKey != "" || o.tlsServerName != ""
}

// tlsConfig returns the TLS settings of the flags, for rediss:// URLs.
func (o connOptions) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.tlsServerName}
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate found", o.tlsCA)
		}
		c.RootCAs = pool
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
