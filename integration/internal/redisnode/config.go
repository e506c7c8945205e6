package redisnode

// Config describes how every node of one [Start] call is configured. The zero
// Config is a plain Redis 7 server that persists nothing (save "" and
// appendonly no), so a restart loses every key unless persistence is asked
// for.
type Config struct {
	// AppendOnly turns on AOF persistence (appendonly yes). Default: off.
	AppendOnly bool
	// AppendFsync is the appendfsync policy: "always", "everysec" or "no".
	// Default "": Redis's own default (everysec). Only meaningful with
	// AppendOnly.
	AppendFsync string
	// Password sets requirepass; [Node.Do] authenticates with it. Default:
	// none.
	Password string
	// Users are ACL users created at start-up (the "user" directive).
	// Default: none.
	Users []User
	// Cluster starts the nodes with cluster-enabled yes, as [StartCluster]
	// does before it joins them. Default: off.
	Cluster bool
	// TLS adds a TLS port with a server certificate for the loopback
	// addresses issued by a test CA made for the [Start] call; see
	// [Node.TLSAddr] and [Node.TLSConfig]. Clients are not asked for
	// certificates (tls-auth-clients no). The plain port stays open. Not
	// with Cluster. Default: off.
	TLS bool
	// Directives are extra redis.conf lines, each a directive name
	// followed by its arguments, e.g. {"maxmemory", "4mb"} or {"save",
	// "60", "1"}. They come after every line the fields above produce, so
	// for single-valued directives they win. Default: none.
	Directives [][]string
}

// User is one ACL user, written as a "user" directive.
type User struct {
	// Name is the user name.
	Name string
	// Rules are the ACL rules, e.g. {"on", ">secret", "~lock:*", "+@all"}.
	Rules []string
}

// directives returns the config lines the Config asks for, without the
// backend's own lines (port, bind, dir, TLS file paths).
func (c Config) directives() [][]string {
	// Persist nothing unless asked: a "save" directive in c.Directives
	// comes later and replaces this one.
	lines := [][]string{{"save", ""}}
	if c.AppendOnly {
		lines = append(lines, []string{"appendonly", "yes"})
	} else {
		lines = append(lines, []string{"appendonly", "no"})
	}
	if c.AppendFsync != "" {
		lines = append(lines, []string{"appendfsync", c.AppendFsync})
	}
	if c.Password != "" {
		lines = append(lines, []string{"requirepass", c.Password})
	}
	for _, u := range c.Users {
		lines = append(lines, append([]string{"user", u.Name}, u.Rules...))
	}
	if c.Cluster {
		lines = append(lines,
			[]string{"cluster-enabled", "yes"},
			[]string{"cluster-config-file", "nodes.conf"},
			// Short enough that a cluster notices a dead node within a
			// test, long enough for a loaded 2-core machine.
			[]string{"cluster-node-timeout", "5000"},
		)
	}
	return lines
}
