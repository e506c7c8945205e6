module github.com/locksmith-go/locksmith/cmd/locksmith

go 1.26.0

replace github.com/locksmith-go/locksmith => ../..

replace github.com/locksmith-go/locksmith/driver/goredis => ../../driver/goredis

require (
	github.com/locksmith-go/locksmith v0.1.0
	github.com/locksmith-go/locksmith/driver/goredis v0.1.0
	github.com/redis/go-redis/v9 v9.17.3
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.47.0
	golang.org/x/term v0.45.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
)
