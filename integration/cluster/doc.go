// Package cluster checks a Redis Cluster used as one Redlock node, through
// the cluster clients of go-redis, rueidis and valkey-go, beside plain nodes reached
// through each of locksmith's adapters. It holds tests only.
package cluster
