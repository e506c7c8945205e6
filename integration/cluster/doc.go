// Package cluster checks a Redis Cluster used as one Redlock node, through
// the cluster clients of go-redis and rueidis, beside plain nodes reached
// through each of locksmith's adapters. It holds tests only.
package cluster
