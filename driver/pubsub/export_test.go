package pubsub

import "time"

// SetAfterLastLeft makes h call hook in a subscription's cancel after the
// last subscriber of a channel left, between the Hub's bookkeeping and the
// UNSUBSCRIBE it may send.
func SetAfterLastLeft(h *Hub, hook func(channel string)) { h.afterLastLeft = hook }

// SetPause makes h call pause, instead of sleeping, for each delay before
// it opens a new connection.
func SetPause(h *Hub, pause func(time.Duration)) { h.pause = pause }

// SetBeforeSend makes h call hook in Subscribe after the subscriber joined
// its channel, before Subscribe sends the SUBSCRIBE it may send.
func SetBeforeSend(h *Hub, hook func(channel string)) { h.beforeSend = hook }
