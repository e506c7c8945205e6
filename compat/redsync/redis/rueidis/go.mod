module github.com/locksmith-go/locksmith/compat/redsync/redis/rueidis

go 1.26.0

replace (
	github.com/locksmith-go/locksmith => ../../../..
	github.com/locksmith-go/locksmith/driver/rueidis => ../../../../driver/rueidis
)

require (
	github.com/yuin/gopher-lua v1.1.1 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/locksmith-go/locksmith v0.1.0
	github.com/locksmith-go/locksmith/driver/rueidis v0.1.0
	github.com/redis/rueidis v1.0.79
	github.com/redis/rueidis/rueidiscompat v1.0.79
)
