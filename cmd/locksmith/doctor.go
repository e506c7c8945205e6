package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/locksmith-go/locksmith/driver"
	"github.com/locksmith-go/locksmith/redlock"
)

const doctorHelp = `Check, node by node, what the safety of Redlock rests on, and exit 1 when
something unsafe (an error) is found; warnings alone exit 0.

  reachable     the node answers; round-trip time and server version
  eviction      maxmemory-policy: anything but noeviction may evict lock keys
                (an error when a maxmemory is set, a warning otherwise)
  persistence   appendonly yes with appendfsync always; otherwise a crashed
                node must stay down for longer than the longest TTL before it
                restarts (a warning; an error with --fencing, whose counters
                must never go back)
  role          a replica is an error; a master with replicas that may be
                promoted over it is a warning
  cluster       a Redis Cluster counts as one node, only as safe as its failover
  permissions   SCRIPT LOAD, EVALSHA, EVAL and a lock taken, extended and
                released on a scratch key that is removed (errors), then
                PUBLISH and SUBSCRIBE for fast hand-off (warnings)
  clock         the node's TIME against the local monotonic clock over
                --clock-sample: a rate differing by more than --drift-factor
                is an error
  nodes         fewer than 3 or an even count (warning); two URLs that reach
                the same server, by its run_id (error)

INFO and CONFIG GET need permissions a least-privilege lock user lacks; run
doctor as an administrative user to check everything.
`

type finding struct {
	Node   string `json:"node"`
	Check  string `json:"check"`
	Status string `json:"status"` // ok, warning or error
	Detail string `json:"detail"`
}

const (
	statusOK      = "ok"
	statusWarning = "warning"
	statusError   = "error"
)

type doctorReport struct {
	Checks   []finding `json:"checks"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
}

type doctorOptions struct {
	asJSON        bool
	fencing       bool
	clockSample   time.Duration
	driftFactor   float64
	scratchPrefix string
}

func (a *app) doctorCommand() *cobra.Command {
	var o doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Check that the nodes are fit for Redlock",
		Long:  doctorHelp,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.clockSample <= 0 {
				return usagef("--clock-sample %v: want a positive duration", o.clockSample)
			}
			if o.driftFactor <= 0 || o.driftFactor >= 1 {
				return usagef("--drift-factor %v: want a number in (0, 1)", o.driftFactor)
			}
			return a.doctor(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.asJSON, "json", false, "print JSON")
	f.BoolVar(&o.fencing, "fencing", false, "the nodes serve fenced locks: persistence problems are errors")
	f.DurationVar(&o.clockSample, "clock-sample", 3*time.Second, "how long to compare each node's clock with the local one")
	f.Float64Var(&o.driftFactor, "drift-factor", defaultDriftFactor, "the largest clock rate difference allowed, as the locks' drift factor")
	f.StringVar(&o.scratchPrefix, "scratch-prefix", "locksmith:doctor:", "prefix of the scratch key and channel used to check permissions")
	return cmd
}

// nodeProbe is what doctor learned about one node.
type nodeProbe struct {
	findings []finding
	runID    string
}

func (p *nodeProbe) add(node, check, status, format string, args ...any) {
	p.findings = append(p.findings, finding{Node: node, Check: check, Status: status, Detail: fmt.Sprintf(format, args...)})
}

func (a *app) doctor(o doctorOptions) error {
	nodes, err := a.nodes()
	if err != nil {
		return err
	}
	defer nodes.close()
	probes := make([]nodeProbe, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { probes[i] = a.probe(n, o) })
	}
	wg.Wait()
	var report doctorReport
	for _, p := range probes {
		report.Checks = append(report.Checks, p.findings...)
	}
	report.Checks = append(report.Checks, checkNodeList(nodes, probes)...)
	for i := range report.Checks {
		report.Checks[i].Detail = scrub(report.Checks[i].Detail, a.secrets)
		switch report.Checks[i].Status {
		case statusError:
			report.Errors++
		case statusWarning:
			report.Warnings++
		}
	}
	if o.asJSON {
		out, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, string(out))
	} else {
		w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NODE\tCHECK\tSTATUS\tDETAIL")
		for _, f := range report.Checks {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", f.Node, f.Check, f.Status, f.Detail)
		}
		w.Flush()
		fmt.Fprintf(a.stdout, "%d error(s), %d warning(s)\n", report.Errors, report.Warnings)
	}
	if report.Errors > 0 {
		return withCode(exitUnsafe, nil)
	}
	return nil
}

// defaultDriftFactor is the default of --drift-factor: the drift factor
// locks have by default (redlock.WithDriftFactor), which locksmith run
// keeps.
const defaultDriftFactor = 0.01

// probeTimeout bounds each request doctor makes.
const probeTimeout = 2 * time.Second

func (a *app) probe(n *node, o doctorOptions) nodeProbe {
	var p nodeProbe
	ctx := context.Background()
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, probeTimeout) }

	// The first PING also dials; the second measures the round trip.
	var rtt time.Duration
	var err error
	for range 2 {
		c, cancel := call()
		start := time.Now()
		err = n.client.Ping(c).Err()
		rtt = time.Since(start)
		cancel()
	}
	var refusal redis.Error
	if err != nil && !errors.As(err, &refusal) {
		p.add(n.name, "reachable", statusError, "%v", err)
		return p
	}
	// A refused PING (a user without +ping) still proves the node answers.

	c, cancel := call()
	raw, err := n.client.Info(c, "server", "replication", "cluster").Result()
	cancel()
	info := parseInfo(raw)
	if err != nil {
		p.add(n.name, "reachable", statusOK, "rtt %s", rtt.Round(time.Microsecond))
		p.add(n.name, "info", statusWarning, "INFO refused (%v): version, role and cluster mode unchecked", err)
	} else {
		p.runID = info["run_id"]
		p.add(n.name, "reachable", statusOK, "rtt %s, redis %s", rtt.Round(time.Microsecond), info["redis_version"])
		p.checkRole(n.name, info)
	}

	c, cancel = call()
	cfg, err := n.client.ConfigGet(c, "*").Result()
	cancel()
	if err != nil {
		p.add(n.name, "config", statusWarning, "CONFIG GET refused (%v): eviction and persistence unchecked", err)
	} else {
		p.checkEviction(n.name, cfg)
		p.checkPersistence(n.name, cfg, o.fencing)
	}

	p.checkPermissions(n, o.scratchPrefix)
	p.checkClock(n, o)
	return p
}

// parseInfo reads the "field:value" lines of an INFO reply.
func parseInfo(raw string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(raw, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

func (p *nodeProbe) checkRole(name string, info map[string]string) {
	switch role := info["role"]; {
	case role == "slave":
		p.add(name, "role", statusError, "a replica of %s:%s: it refuses lock writes, and its master is the node to list", info["master_host"], info["master_port"])
	case info["connected_slaves"] != "" && info["connected_slaves"] != "0":
		p.add(name, "role", statusWarning, "a master with %s replica(s): a promoted replica may lack the latest locks", info["connected_slaves"])
	default:
		p.add(name, "role", statusOK, "%s without replicas", role)
	}
	if info["cluster_enabled"] == "1" {
		p.add(name, "cluster", statusWarning, "cluster mode: the whole cluster counts as one node, only as safe as its failover")
	}
}

func (p *nodeProbe) checkEviction(name string, cfg map[string]string) {
	policy, maxmemory := cfg["maxmemory-policy"], cfg["maxmemory"]
	switch {
	case policy == "noeviction":
		p.add(name, "eviction", statusOK, "maxmemory-policy noeviction")
	case maxmemory != "0" && maxmemory != "":
		p.add(name, "eviction", statusError, "maxmemory-policy %s with maxmemory %s may evict lock keys; use noeviction", policy, maxmemory)
	default:
		p.add(name, "eviction", statusWarning, "maxmemory-policy %s evicts lock keys once a maxmemory is set; use noeviction", policy)
	}
}

func (p *nodeProbe) checkPersistence(name string, cfg map[string]string, fencing bool) {
	aof, fsync := cfg["appendonly"], cfg["appendfsync"]
	if aof == "yes" && fsync == "always" {
		p.add(name, "persistence", statusOK, "appendonly yes, appendfsync always")
		return
	}
	status := statusWarning
	if fencing {
		status = statusError
	}
	what := "appendonly " + aof
	if aof == "yes" {
		what += ", appendfsync " + fsync
	}
	p.add(name, "persistence", status, "%s: a crash loses recent locks; restart a crashed node only after the longest TTL in use, or set appendonly yes, appendfsync always (required for fencing)", what)
}

// checkPermissions runs what locksmith needs, on a scratch key it removes.
func (p *nodeProbe) checkPermissions(n *node, prefix string) {
	suffix := make([]byte, 8)
	rand.Read(suffix)
	scratch := prefix + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 4*probeTimeout)
	defer cancel()

	var refused []string
	sha, err := n.client.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		refused = append(refused, "SCRIPT LOAD: "+err.Error())
	} else if err := n.client.EvalSha(ctx, sha, nil).Err(); err != nil {
		refused = append(refused, "EVALSHA: "+err.Error())
	}
	if err := n.client.Eval(ctx, "return 1", nil).Err(); err != nil {
		refused = append(refused, "EVAL: "+err.Error())
	}
	if len(refused) == 0 {
		// Only a refusal of the commands the scripts call is left to
		// find; a refusal above would fail the lock again.
		if err := lockCycle(ctx, n.conn, scratch); err != nil {
			refused = append(refused, "lock on a scratch key: "+err.Error())
			n.client.Del(ctx, scratch)
		}
	}
	if len(refused) > 0 {
		p.add(n.name, "permissions", statusError, "%s", strings.Join(refused, "; "))
	} else {
		p.add(n.name, "permissions", statusOK, "SCRIPT LOAD, EVALSHA, EVAL; lock, extend, release")
	}

	refused = refused[:0]
	if err := n.client.Publish(ctx, scratch, "doctor").Err(); err != nil {
		refused = append(refused, "PUBLISH: "+err.Error())
	}
	sub := n.client.Subscribe(ctx, scratch)
	if _, err := sub.Receive(ctx); err != nil {
		refused = append(refused, "SUBSCRIBE: "+err.Error())
	}
	sub.Close()
	if len(refused) > 0 {
		p.add(n.name, "hand-off", statusWarning, "%s: waiters poll instead of being woken by releases", strings.Join(refused, "; "))
	} else {
		p.add(n.name, "hand-off", statusOK, "PUBLISH, SUBSCRIBE")
	}
}

// lockCycle takes, extends and releases a lock on key on the node alone.
func lockCycle(ctx context.Context, conn driver.Conn, key string) error {
	client, err := redlock.New([]driver.Conn{conn}, redlock.WithReleaseNotifications(false))
	if err != nil {
		return err
	}
	l, err := client.TryLock(ctx, key, 10*time.Second)
	if err != nil {
		return err
	}
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		l.Unlock(ctx)
		return err
	}
	return l.Unlock(ctx)
}

// checkClock compares the rate of the node's clock (TIME) with the local
// monotonic clock over o.clockSample. Each reading is taken as half way
// through its round trip, and the half round trips bound the error.
func (p *nodeProbe) checkClock(n *node, o doctorOptions) {
	read := func() (server, local time.Time, slack time.Duration, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		before := time.Now()
		server, err = n.client.Time(ctx).Result()
		half := time.Since(before) / 2
		return server, before.Add(half), half, err
	}
	s0, l0, e0, err := read()
	if err == nil {
		time.Sleep(o.clockSample)
		var s1, l1 time.Time
		var e1 time.Duration
		s1, l1, e1, err = read()
		if err == nil {
			status, detail := clockVerdict(s1.Sub(s0), l1.Sub(l0), e0+e1, o.driftFactor)
			p.add(n.name, "clock", status, "%s", detail)
			return
		}
	}
	p.add(n.name, "clock", statusWarning, "TIME failed (%v): clock rate unchecked", err)
}

// clockVerdict judges a node's clock that advanced by server while the
// local monotonic clock advanced by local, each reading uncertain by up to
// slack in all: only a difference beyond slack and TIME's microsecond
// resolution counts against the drift factor.
func clockVerdict(server, local, slack time.Duration, factor float64) (status, detail string) {
	gap := server - local
	rate := 100 * float64(gap) / float64(local)
	beyond := gap.Abs() - slack - 2*time.Microsecond
	f := strconv.FormatFloat(100*factor, 'g', -1, 64) + "%"
	if beyond > time.Duration(factor*float64(local)) {
		return statusError, fmt.Sprintf("runs %+.3f%% against the local clock over %s, beyond the drift factor %s", rate, local.Round(time.Millisecond), f)
	}
	return statusOK, fmt.Sprintf("rate %+.3f%% over %s, within the drift factor %s", rate, local.Round(time.Millisecond), f)
}

// checkNodeList checks the count of nodes and that no two reach one
// server.
func checkNodeList(nodes nodeList, probes []nodeProbe) []finding {
	var out []finding
	add := func(status, format string, args ...any) {
		out = append(out, finding{Node: "(all)", Check: "nodes", Status: status, Detail: fmt.Sprintf(format, args...)})
	}
	n := len(nodes)
	switch {
	case n < 3:
		add(statusWarning, "%d node(s): a single failure stops every lock; use 3 or 5", n)
	case n%2 == 0:
		add(statusWarning, "%d nodes: an even count tolerates no more failures than one node fewer; use an odd count", n)
	default:
		add(statusOK, "%d nodes, an odd count", n)
	}
	for i := range nodes {
		for j := range i {
			if probes[i].runID != "" && probes[i].runID == probes[j].runID {
				add(statusError, "%s and %s are one server (run_id %.8s…): it would count twice towards a quorum", nodes[j].name, nodes[i].name, probes[i].runID)
			}
		}
	}
	return out
}
