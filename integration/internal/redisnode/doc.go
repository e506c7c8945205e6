// Package redisnode starts real Redis 7 servers for the locksmith integration
// tests and lets a test stop, kill, pause, resume and restart them.
//
// A test asks for n independent servers and gets [Node] values:
//
//	nodes := redisnode.Start(t, 5, redisnode.Config{AppendOnly: true, AppendFsync: "always"})
//	client := redis.NewClient(&redis.Options{Addr: nodes[0].Addr()})
//	nodes[0].Kill(t)
//	nodes[0].Restart(t)
//	nodes[1].Do(t, "SCRIPT", "FLUSH")
//
// Two backends run the servers: redis-server processes on free loopback
// ports (those of internal/redisserver) and one container per server, run
// with the docker command. $LOCKSMITH_BACKEND picks one; see [BackendEnv] and
// [ImageEnv].
//
// Every test binary using this package runs its tests through [Main], which
// afterwards fails the run if any server it started, or any goroutine, is
// still there:
//
//	func TestMain(m *testing.M) { os.Exit(redisnode.Main(m)) }
//
// # Errors
//
// Functions and methods that take a testing.TB report failures with
// t.Fatalf: a server that does not start or answer, a backend that was asked
// for and cannot run, a lifecycle call in the wrong state. A backend is never
// silently swapped for another and a test is never skipped. [Node.DoContext]
// returns errors instead; a Redis error reply is a *resp.Error.
//
// # Concurrency
//
// Methods taking a testing.TB must be called from the test's own goroutine.
// [Node.DoContext], [Node.Addr], [Node.TLSAddr] and [Node.TLSConfig] may be
// called from any goroutine. Lifecycle calls on one node are serialized.
package redisnode
