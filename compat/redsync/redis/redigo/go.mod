module github.com/locksmith-go/locksmith/compat/redsync/redis/redigo

go 1.26.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/gomodule/redigo v1.9.3
	github.com/locksmith-go/locksmith v0.1.0
	github.com/locksmith-go/locksmith/driver/redigo v0.1.0
)

require github.com/yuin/gopher-lua v1.1.1 // indirect

replace (
	github.com/locksmith-go/locksmith => ../../../..
	github.com/locksmith-go/locksmith/driver/redigo => ../../../../driver/redigo
)
