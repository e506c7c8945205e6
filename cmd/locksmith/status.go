package main

import (
	"context"
	"encoding/json"
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

It exits 0 when every key could be read on a quorum of the nodes, whether
held or not, and with --error-exit-code (69) otherwise.
`

type statusReport struct {
	Keys []keyStatus `json:"keys"`
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
}

type nodeStatus struct {
	Node     string `json:"node"`
	Exists   bool   `json:"exists"`
	Type     string `json:"type,omitempty"`
	Value    string `json:"value_prefix,omitempty"`
	TTLMilli int64  `json:"ttl_ms"`
	NoExpiry bool   `json:"no_expiry,omitempty"`
	Counter  uint64 `json:"fencing_counter"`
	Error    string `json:"error,omitempty"`
}

func (a *app) statusCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json] KEY...",
		Short: "Show who holds locks, node by node",
		Long:  statusHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("status needs at least one KEY")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.status(args, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) status(keys []string, asJSON bool) error {
	client, nodes, err := a.client()
	if err != nil {
		return err
	}
	defer closeAfter(client, nodes)
	var report statusReport
	short := false
	for _, key := range keys {
		in, err := client.Inspect(context.Background(), key)
		if err != nil {
			return withCode(exitUsage, err)
		}
		ks := a.keyStatus(in, nodes)
		short = short || ks.Answered < ks.Quorum
		report.Keys = append(report.Keys, ks)
	}
	if asJSON {
		out, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, string(out))
	} else {
		a.printStatus(report)
	}
	if short {
		return withCode(a.errorCode, nil)
	}
	return nil
}

func (a *app) keyStatus(in *redlock.Inspection, nodes nodeList) keyStatus {
	ks := keyStatus{Key: in.Key, Held: in.Held, Value: in.ValuePrefix(), Quorum: in.Quorum}
	if in.Held && !in.HeldUntil.IsZero() {
		ks.HeldUntil = formatTime(in.HeldUntil)
	}
	for i, s := range in.Nodes {
		ns := nodeStatus{Node: nodes[i].name}
		if s.Err != nil {
			ns.Error = scrub(s.Err.Error(), a.secrets)
		} else {
			ks.Answered++
			ns.Exists, ns.Type, ns.Value = s.Exists, s.Type, s.ValuePrefix()
			ns.TTLMilli, ns.NoExpiry, ns.Counter = s.TTL.Milliseconds(), s.NoExpiry, s.Counter
			if in.Held && s.Value == in.Value {
				ks.Holders++
			}
		}
		ks.Nodes = append(ks.Nodes, ns)
	}
	return ks
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
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\n", ks.Key, ns.Node, state, value, ttl, ns.Counter)
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
	}
}
