package redigo

import (
	"context"

	"github.com/gomodule/redigo/redis"

	"github.com/locksmith-go/locksmith/driver"
)

// ServerID implements [driver.ServerIdentifier]: the run_id that the server
// reported (INFO server, asked on the connection of the first call it
// answered, and of later calls until the answer settles it), and whether it
// is settled: "" and false before, "" and true when the server reports none
// or refuses INFO. A pool can dial any server, so this is how locksmith
// tells that two pools reach one server.
func (c *Conn) ServerID() (id string, known bool) {
	if c == nil {
		return "", false
	}
	if id := c.serverID.Load(); id != nil {
		return *id, true
	}
	return "", false
}

// learnServerID asks the server behind conn, which has just answered a
// command, for its run_id; do calls it until the ID is settled. A refused
// INFO or a reply without run_id settles it as none; a failure of the
// connection, the end of ctx and the error replies of a passing state
// (BUSY, LOADING) leave it to a later call.
func (c *Conn) learnServerID(ctx context.Context, conn redis.Conn) {
	reply, err := redis.DoContext(conn, ctx, "INFO", "server")
	if err != nil && (!isRedisError(err) || isPassing(err)) {
		return
	}
	info, _ := reply.([]byte) // nil for an error reply or a reply of another kind: none
	id := driver.RunID(string(info))
	c.serverID.CompareAndSwap(nil, &id)
}

// isPassing reports whether err is the error reply of a server that
// refuses commands only for a while: busy with a long script, or loading
// its data at start-up.
func isPassing(err error) bool {
	switch errorCode(err) {
	case "BUSY", "LOADING":
		return true
	}
	return false
}
