package redlock

// SetSlotOrder makes every attempt of s try the slots in the order that
// order returns, in place of a random permutation: for tests that drive a
// schedule.
func SetSlotOrder(s *Semaphore, order func(n int) []int) { s.permute = order }
