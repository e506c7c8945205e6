module github.com/locksmith-go/locksmith/compat/redsync/redis/valkeygo

go 1.26.0

replace (
	github.com/locksmith-go/locksmith => ../../../..
	github.com/locksmith-go/locksmith/driver/valkeygo => ../../../../driver/valkeygo
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/locksmith-go/locksmith v0.1.0
	github.com/locksmith-go/locksmith/driver/valkeygo v0.1.0
	github.com/valkey-io/valkey-go v1.0.80
	go.uber.org/goleak v1.3.0
)

require (
	github.com/yuin/gopher-lua v1.1.1 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
