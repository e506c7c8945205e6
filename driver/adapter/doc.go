// Package adapter holds what a [driver.Conn] for a Redis client needs
// besides the client itself: running a call so that it returns when its
// context ends, recognizing the contexts with which a call may run on the
// calling goroutine, making the errors a context caused match it, marking a
// NOSCRIPT reply, and sharing one pub/sub connection among the subscribers
// of a [driver.Notifier]. locksmith's own adapters (driver/goredis,
// driver/redigo, driver/rueidis) are built on it; it is for people writing
// an adapter for another client, and programs that only take locks never
// import it.
//
// # Honouring ctx
//
// Every method of a Conn returns as soon as its ctx is done, but many
// clients go on waiting for a reply once a command is sent, whatever
// becomes of ctx. Pick, for each call:
//
//   - [Run], the default: it calls the client on a goroutine of its own and
//     returns ctx.Err() as soon as ctx ends, leaving the client's call to
//     finish in the background. A [Background] counts those goroutines;
//     keep one per Conn and implement [driver.Waiter] with its Wait.
//   - A call on the calling goroutine, which saves Run's goroutine, only
//     when [Inline] reports ctx and the client bounds every wait and every
//     socket read and write of the call by ctx's deadline. locksmith makes
//     such contexts for its per-node calls, as the driver package
//     documentation states; [WithTimeout] makes one for an adapter's
//     tests. Put the call's error through [ContextErr].
//   - A call on the calling goroutine on a connection the Conn holds,
//     when [Inline] reports ctx and the client bounds a command on a
//     connection in hand by ctx's deadline, although getting a connection
//     from its pool may wait longer (a dial, a health check). A [Spare]
//     keeps the connection of one call for the next; a call that finds
//     none goes through Run. Count a call on a kept connection with the
//     Background's Begin and End, before it takes the connection: it may
//     run on one of locksmith's goroutines that no caller waits for.
//
// A client that does react to a cancelled ctx in the middle of a command
// needs neither: call it directly.
//
// # Errors
//
// [ContextErr] makes an error that ctx caused match ctx.Err(), as
// driver.Conn requires, when the client reports it as a socket timeout of
// its own; [Run] applies it. [NoScript] makes the server's NOSCRIPT reply
// match [driver.ErrNoScript] while keeping the client's error in the chain.
//
// # Release notifications
//
// A Conn implements driver.Notifier, which is optional, with a [Hub]: its
// Subscribe method calls [Hub.Subscribe], and the adapter gives the Hub a
// way to open a [PubSub], a pub/sub connection of the client. The Hub
// shares that connection among every subscription, opens it for the first
// one, reconnects and subscribes again when it fails, and closes it after
// the last one ends.
//
// # Concurrency
//
// Run, ContextErr, NoScript, WithTimeout and Inline may be called from any
// goroutine, and the methods of a Background, a Spare and a Hub
// concurrently.
package adapter
