package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksmith-go/locksmith/redlock"
)

const statusHelp = `For each KEY and node: whether the node holds the key, the first characters
of its value (never the whole value), its remaining TTL and the resource's
fencing counter; then whether a quorum holds one value and until when at the
latest. status only reads: it changes no key.

  locksmith status --limit 4 exports

reads exports as a semaphore of 4 permits, as run --limit 4 holds them: for
each node, the limit recorded there ("none" without a record) and the slots it
holds; then each permit that some node holds: its slot, its slot's key, how
many nodes agree on its holder (a quorum makes it live), the first characters
of its value and how long it stays valid at the most. A limit recorded on a
node other than N is reported. --json gives the same, with each permit's nodes
as for a lock but without fencing counters, which status does not read for
permits.

  locksmith status --election scheduler

reads scheduler as an election, whose leaders hold the lock key scheduler: the
lock as above, then the leader's identity and term, or that there is none.

It exits 0 when every key could be read on a quorum of the nodes, whether
held or not, and with --error-exit-code (69) otherwise.
`

type statusReport struct {
	Keys       []keyStatus       `json:"keys,omitempty"`
	Semaphores []semaphoreStatus `json:"semaphores,omitempty"`
}

type keyStatus struct {
	Key       string       `json:"key"`
	Held      bool         `json:"held"`
	Value     string       `json:"value_prefix,omitempty"`
	Holders   int          `json:"holders"`
	Quorum    int          `json:"quorum"`
	HeldUntil string       `json:"held_until,omitempty"`
	Answered  int          `json:"answered"`
	Nodes     []nodeStatus `json:"nodes"`
	// Leader is the key's leader with --election.
	Leader *leaderStatus `json:"leader,omitempty"`
}

// leaderStatus is who leads an election, as status --election reads it.
type leaderStatus struct {
	Identity  string `json:"identity,omitempty"`
	Term      uint64 `json:"term"` // 0 for no leader
	HeldUntil string `json:"held_until,omitempty"`
	Error     string `json:"error,omitempty"` // when too few nodes answered to tell
}

type nodeStatus struct {
	Node     string  `json:"node"`
	Exists   bool    `json:"exists"`
	Type     string  `json:"type,omitempty"`
	Value    string  `json:"value_prefix,omitempty"`
	TTLMilli int64   `json:"ttl_ms"`
	NoExpiry bool    `json:"no_expiry,omitempty"`
	Counter  *uint64 `json:"fencing_counter,omitempty"` // nil for a permit
	Error    string  `json:"error,omitempty"`
}

func (a *app) statusCommand() *cobra.Command {
	var asJSON bool
	var limit int
	var election bool
	cmd := &cobra.Command{
		Use:   "status [--json] [--limit N | --election] KEY...",
		Short: "Show who holds locks, node by node",
		Long:  statusHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("status needs at least one KEY")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if flagChanged(cmd.Flags(), "limit") && (limit < 1 || limit > redlock.MaxSemaphoreLimit) {
				return usagef("--limit %d: want 1 to %d permits", limit, redlock.MaxSemaphoreLimit)
			}
			if election && flagChanged(cmd.Flags(), "limit") {
				return usagef("--limit and --election do not go together")
			}
			return a.status(args, limit, election, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&limit, "limit", 0, "read each KEY as a semaphore of this many permits, as run --limit holds them")
	cmd.Flags().BoolVar(&election, "election", false, "read each KEY as an election and show its leader's identity and term")
	return cmd
}

func (a *app) status(keys []string, limit int, election, asJSON bool) error {
	client, nodes, err := a.client()
	if err != nil {
		return err
	}
	defer closeAfter(client, nodes)
	var report statusReport
	short := false
	for _, key := range keys {
		answered, quorum, err := a.read(&report, client, nodes, key, limit, election)
		if err != nil {
			return withCode(exitUsage, err)
		}
		short = short || answered < quorum
	}
	switch {
	case asJSON:
		out, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, string(out))
	case limit == 0:
		a.printStatus(report)
	default:
		a.printSemaphores(report)
	}
	if short {
		return withCode(a.errorCode, nil)
	}
	return nil
}

// read adds the status of key to report, of the lock key or with a limit
// of the semaphore key, and returns how many nodes answered and the
// quorum. With election, it adds the key's leader, and an unknown leader
// counts as too few nodes answering.
func (a *app) read(report *statusReport, client *redlock.Client, nodes nodeList, key string, limit int, election bool) (answered, quorum int, err error) {
	ctx := context.Background()
	if limit == 0 {
		in, err := client.Inspect(ctx, key)
		if err != nil {
			return 0, 0, err
		}
		ks := a.keyStatus(in, nodes, true)
		answered = ks.Answered
		if election {
			if ks.Leader, err = a.leaderStatus(ctx, client, key); err != nil {
				return 0, 0, err
			}
			if ks.Leader.Error != "" {
				answered = 0 // unknown, as without a quorum
			}
		}
		report.Keys = append(report.Keys, ks)
		return answered, ks.Quorum, nil
	}
	sem, err := client.Semaphore(key, limit)
	if err != nil {
		return 0, 0, err
	}
	in, err := sem.Inspect(ctx)
	if err != nil {
		return 0, 0, err
	}
	ss := a.semaphoreState(in, nodes)
	report.Semaphores = append(report.Semaphores, ss)
	return ss.Answered, ss.Quorum, nil
}

// keyStatus reports in, with the fencing counters when counters is set.
func (a *app) keyStatus(in *redlock.Inspection, nodes nodeList, counters bool) keyStatus {
	ks := keyStatus{Key: in.Key, Held: in.Held, Value: in.ValuePrefix(), Quorum: in.Quorum}
	if in.Held && !in.HeldUntil.IsZero() {
		ks.HeldUntil = formatTime(in.HeldUntil)
	}
	for i, s := range in.Nodes {
		ns := nodeStatus{Node: nodes[i].name}
		if counters {
			ns.Counter = &s.Counter
		}
		if s.Err != nil {
			ns.Error = scrub(s.Err.Error(), a.secrets)
		} else {
			ks.Answered++
			ns.Exists, ns.Type, ns.Value = s.Exists, s.Type, s.ValuePrefix()
			ns.TTLMilli, ns.NoExpiry = s.TTL.Milliseconds(), s.NoExpiry
			if in.Held && s.Value == in.Value {
				ks.Holders++
			}
		}
		ks.Nodes = append(ks.Nodes, ns)
	}
	return ks
}

// statusElectionTTL is the TTL of the Election that status reads with:
// it only sets the node timeout when --timeout does not.
const statusElectionTTL = time.Minute

// leaderStatus reads the leader of the election on key.
func (a *app) leaderStatus(ctx context.Context, client *redlock.Client, key string) (*leaderStatus, error) {
	e, err := client.Election(key, statusElectionTTL)
	if err != nil {
		return nil, err
	}
	leader, err := e.Leader(ctx)
	switch {
	case err == nil:
		ls := &leaderStatus{Identity: leader.Identity, Term: leader.Term}
		if !leader.HeldUntil.IsZero() {
			ls.HeldUntil = formatTime(leader.HeldUntil)
		}
		return ls, nil
	case errors.Is(err, redlock.ErrNoLeader):
		return &leaderStatus{}, nil
	default:
		return &leaderStatus{Error: scrub(err.Error(), a.secrets)}, nil
	}
}

func (a *app) printStatus(report statusReport) {
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tNODE\tSTATE\tVALUE\tTTL\tFENCING")
	for _, ks := range report.Keys {
		for _, ns := range ks.Nodes {
			state, value, ttl := "free", "-", "-"
			switch {
			case ns.Error != "":
				state = "error: " + ns.Error
			case ns.Exists && ns.Type != "string":
				state = "held (" + ns.Type + ")"
			case ns.Exists:
				state = "held"
			}
			if ns.Value != "" {
				value = ns.Value
			}
			if ns.Exists {
				ttl = (time.Duration(ns.TTLMilli) * time.Millisecond).String()
				if ns.NoExpiry {
					ttl = "no expiry"
				}
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\n", ks.Key, ns.Node, state, value, ttl, *ns.Counter)
		}
	}
	w.Flush()
	for _, ks := range report.Keys {
		switch {
		case ks.Held && ks.HeldUntil != "":
			fmt.Fprintf(a.stdout, "%s: held by a quorum (%d of %d nodes, quorum %d) until %s at the latest\n", ks.Key, ks.Holders, len(ks.Nodes), ks.Quorum, ks.HeldUntil)
		case ks.Held:
			fmt.Fprintf(a.stdout, "%s: held by a quorum (%d of %d nodes, quorum %d) with no expiry\n", ks.Key, ks.Holders, len(ks.Nodes), ks.Quorum)
		case ks.Answered < ks.Quorum:
			fmt.Fprintf(a.stdout, "%s: unknown: only %d of %d nodes answered (quorum %d)\n", ks.Key, ks.Answered, len(ks.Nodes), ks.Quorum)
		default:
			fmt.Fprintf(a.stdout, "%s: not held by a quorum\n", ks.Key)
		}
		switch l := ks.Leader; {
		case l == nil:
		case l.Error != "":
			fmt.Fprintf(a.stdout, "%s: leader unknown: %s\n", ks.Key, l.Error)
		case l.Term == 0:
			fmt.Fprintf(a.stdout, "%s: no leader\n", ks.Key)
		case l.HeldUntil != "":
			fmt.Fprintf(a.stdout, "%s: leader %q, term %d, until %s at the latest\n", ks.Key, l.Identity, l.Term, l.HeldUntil)
		default:
			fmt.Fprintf(a.stdout, "%s: leader %q, term %d, with no expiry\n", ks.Key, l.Identity, l.Term)
		}
	}
}
