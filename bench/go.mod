module github.com/locksmith-go/locksmith/bench

go 1.26.0

replace (
	github.com/locksmith-go/locksmith => ../
	github.com/locksmith-go/locksmith/driver/goredis => ../driver/goredis
	github.com/locksmith-go/locksmith/driver/redigo => ../driver/redigo
	github.com/locksmith-go/locksmith/driver/rueidis => ../driver/rueidis
	github.com/locksmith-go/locksmith/driver/valkeygo => ../driver/valkeygo
)

require (
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/gomodule/redigo v1.9.3
	github.com/locksmith-go/locksmith v0.1.0
	github.com/locksmith-go/locksmith/driver/goredis v0.1.0
	github.com/locksmith-go/locksmith/driver/redigo v0.1.0
	github.com/locksmith-go/locksmith/driver/rueidis v0.1.0
	github.com/locksmith-go/locksmith/driver/valkeygo v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/redis/rueidis/rueidiscompat v1.0.79
	github.com/valkey-io/valkey-go v1.0.80
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
