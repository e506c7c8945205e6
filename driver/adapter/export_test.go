package adapter

// SetAfterLastLeft makes h call hook in a subscription's cancel after the
// last subscriber of a channel left, between the Hub's bookkeeping and the
// UNSUBSCRIBE it may send.
func SetAfterLastLeft(h *Hub, hook func(channel string)) { h.afterLastLeft = hook }
