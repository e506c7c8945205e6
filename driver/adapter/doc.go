// Package adapter holds what is left of a private context protocol between
// locksmith's core and its adapters, until the core stops using it: the
// core's per-node contexts ([WithTimeout], [Inline], [Unwaited]) and a way
// to run a call so that it returns when its context ends ([Run],
// [Background], [ContextErr]).
//
// Do not use it: locksmith's core bounds every call to a node itself, and
// an adapter passes ctx to its client and nothing more (see the driver
// package). What adapters share lives in package driver
// ([driver.MarkNoScript]) and package driver/pubsub (the Hub). This
// package goes once nothing in locksmith uses it.
package adapter
