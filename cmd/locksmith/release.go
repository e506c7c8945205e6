package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/locksmith-go/locksmith/redlock"
)

const releaseHelp = `Release the lock on KEY held by an owner that will not release it itself,
such as a crashed job.

With --value VALUE (or --value-file FILE, "-" for stdin, so that the value is
not visible to ps) only a lock holding that value is released, on every node
that still holds it; the command exits 1 when a quorum of nodes does not hold
it.

With --force, KEY is deleted on every node whatever it holds, and each
deletion is reported. Another process may hold the lock then and believe it
still does: use it only when no owner can be running. It requires --confirm
with KEY repeated. The resource's fencing counter is kept, so tokens keep
increasing.
`

// releaseTTL is the TTL a lock gets for the moment between being resumed
// and released, should the release not go through.
const releaseTTL = 5 * time.Second

// deleteTimeout bounds the request of a forced release to one node: the
// longest per-node timeout locks get by default (redlock.WithNodeTimeout).
const deleteTimeout = time.Second

func (a *app) releaseCommand() *cobra.Command {
	var value, valueFile, confirm string
	var force bool
	cmd := &cobra.Command{
		Use:   "release KEY (--value VALUE | --value-file FILE | --force --confirm KEY)",
		Short: "Release a lock left behind by its owner",
		Long:  releaseHelp,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			given := 0
			for _, b := range []bool{value != "", valueFile != "", force} {
				if b {
					given++
				}
			}
			if given != 1 {
				return usagef("give one of --value, --value-file and --force")
			}
			if force {
				if confirm != key {
					return usagef("--force deletes %q whatever it holds; add --confirm with the key repeated to do it", key)
				}
				return a.forceRelease(key)
			}
			if valueFile != "" {
				v, err := readValue(valueFile)
				if err != nil {
					return withCode(a.errorCode, err)
				}
				value = v
			}
			a.secrets = append(a.secrets, value)
			return a.releaseValue(key, value)
		},
	}
	f := cmd.Flags()
	f.StringVar(&value, "value", "", "release only the lock holding this value")
	f.StringVar(&valueFile, "value-file", "", `read the value from this file ("-" for stdin)`)
	f.BoolVar(&force, "force", false, "delete the key whatever it holds")
	f.StringVar(&confirm, "confirm", "", "the key again, to confirm --force")
	return cmd
}

func readValue(file string) (string, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return "", fmt.Errorf("value file: %w", err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", errors.New("value file: empty")
	}
	return v, nil
}

func (a *app) releaseValue(key, value string) error {
	client, nodes, err := a.client()
	if err != nil {
		return err
	}
	defer closeAfter(client, nodes)
	shown := redlock.NodeState{Value: value}.ValuePrefix()
	lock, err := client.Resume(context.Background(), key, value, releaseTTL)
	if err != nil {
		var qe *redlock.QuorumError
		if errors.As(err, &qe) && qe.Refused > qe.Nodes-qe.Quorum {
			// Too many nodes answered that the value is not theirs for a
			// quorum to hold it.
			return withCode(exitUnsafe, fmt.Errorf("not released: the value given does not hold the lock on %q (see locksmith status)", key))
		}
		if qe != nil {
			return a.fail(fmt.Errorf("not released: too few nodes answered to check the value on %q%s", key, nodeErrors(qe)))
		}
		return a.fail(err)
	}
	if err := lock.Unlock(context.Background()); err != nil {
		return withCode(exitUnsafe, fmt.Errorf("releasing %q: %w", key, err))
	}
	fmt.Fprintf(a.stdout, "released %q (value %s)\n", key, shown)
	return nil
}

// nodeErrors lists the node errors of qe, each after "; ".
func nodeErrors(qe *redlock.QuorumError) string {
	var b strings.Builder
	for _, ne := range qe.Errors {
		fmt.Fprintf(&b, "; %v", ne)
	}
	return b.String()
}

func (a *app) forceRelease(key string) error {
	nodes, err := a.nodes()
	if err != nil {
		return err
	}
	defer nodes.close()
	failed := 0
	for _, n := range nodes {
		what, err := deleteKey(n.client, key)
		if err != nil {
			failed++
			fmt.Fprintf(a.stdout, "%s: %s\n", n.name, scrub(err.Error(), a.secrets))
			continue
		}
		fmt.Fprintf(a.stdout, "%s: %s\n", n.name, what)
	}
	if failed > 0 {
		return withCode(a.errorCode, fmt.Errorf("%d of %d nodes failed", failed, len(nodes)))
	}
	return nil
}

// deleteKey deletes key on one node and says what it held.
func deleteKey(c *redis.Client, key string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	v, err := c.GetDel(ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "no key", nil
	case err == nil:
		shown := redlock.NodeState{Value: v}.ValuePrefix()
		if shown == "" {
			shown = fmt.Sprintf("of %d characters", len(v))
		}
		return fmt.Sprintf("deleted %q, value %s", key, shown), nil
	case strings.HasPrefix(err.Error(), "WRONGTYPE"):
		kind, _ := c.Type(ctx, key).Result()
		if err := c.Del(ctx, key).Err(); err != nil {
			return "", err
		}
		return fmt.Sprintf("deleted %q, a %s", key, kind), nil
	default:
		return "", err
	}
}
