module github.com/locksmith-go/locksmith/compat/redsync/redis/goredis

go 1.26.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/locksmith-go/locksmith v0.1.0
	github.com/locksmith-go/locksmith/driver/goredis v0.1.0
	github.com/redis/go-redis/v9 v9.17.3
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
)

replace (
	github.com/locksmith-go/locksmith => ../../../..
	github.com/locksmith-go/locksmith/driver/goredis => ../../../../driver/goredis
)
