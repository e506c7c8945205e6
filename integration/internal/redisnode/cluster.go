package redisnode

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// StartCluster starts masters nodes with cluster-enabled yes with [Start]
// and joins them into one Redis Cluster of masters without replicas: the
// 16384 slots are split into contiguous ranges (CLUSTER ADDSLOTSRANGE), each
// node gets its own config epoch, and the first node meets the others
// (CLUSTER MEET). It returns once every node reports cluster_state:ok and
// knows all the others. cfg.Cluster is set for the caller.
//
// Addressing: cluster nodes announce their own address in MOVED replies and
// CLUSTER SLOTS, and a cluster client follows it. A process announces
// 127.0.0.1 and its port, so nothing changes. A container announces its IP
// on the Docker bridge, so on the container backend [Node.Addr] of a cluster
// node is that IP and port 6379, reached from the host over the bridge, and
// it may change when the node is restarted.
func StartCluster(t testing.TB, masters int, cfg Config) []*Node {
	t.Helper()
	cfg.Cluster = true
	nodes := Start(t, masters, cfg)
	per := clusterSlots / len(nodes)
	for i, n := range nodes {
		first, last := i*per, (i+1)*per-1
		if i == len(nodes)-1 {
			last = clusterSlots - 1
		}
		// Distinct epochs spare the cluster the collision resolution
		// that would otherwise run when every node starts at epoch 0.
		n.Do(t, "CLUSTER", "SET-CONFIG-EPOCH", i+1)
		n.Do(t, "CLUSTER", "ADDSLOTSRANGE", first, last)
	}
	for _, n := range nodes[1:] {
		ip, port, bus := n.srv.meetAddr()
		nodes[0].Do(t, "CLUSTER", "MEET", ip, port, bus)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := waitClusterOK(ctx, nodes); err != nil {
		t.Fatalf("redisnode: forming a cluster: %v", err)
	}
	return nodes
}

func waitClusterOK(ctx context.Context, nodes []*Node) error {
	var lastErr error
	for {
		lastErr = clusterOK(ctx, nodes)
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not settle within %s: %w", readyTimeout, lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterOK checks every node's CLUSTER INFO.
func clusterOK(ctx context.Context, nodes []*Node) error {
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    strconv.Itoa(len(nodes)),
	}
	for _, n := range nodes {
		reply, err := n.DoContext(ctx, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", n.Addr(), err)
		}
		text, ok := reply.(string)
		if !ok {
			return fmt.Errorf("%s: CLUSTER INFO replied %T", n.Addr(), reply)
		}
		info := ParseInfo(text)
		for k, v := range want {
			if info[k] != v {
				return fmt.Errorf("%s: %s is %q, want %q", n.Addr(), k, info[k], v)
			}
		}
	}
	return nil
}

// ParseInfo parses the "field:value" lines of an INFO or CLUSTER INFO reply;
// section headers and blank lines are skipped.
func ParseInfo(text string) map[string]string {
	out := make(map[string]string)
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}
