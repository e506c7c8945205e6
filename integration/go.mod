module github.com/locksmith-go/locksmith/integration

go 1.26.0

replace (
	github.com/locksmith-go/locksmith => ../
	github.com/locksmith-go/locksmith/compat/redislock => ../compat/redislock
	github.com/locksmith-go/locksmith/compat/redsync/redis/goredis => ../compat/redsync/redis/goredis
	github.com/locksmith-go/locksmith/compat/redsync/redis/redigo => ../compat/redsync/redis/redigo
	github.com/locksmith-go/locksmith/compat/redsync/redis/rueidis => ../compat/redsync/redis/rueidis
	github.com/locksmith-go/locksmith/driver/goredis => ../driver/goredis
	github.com/locksmith-go/locksmith/driver/redigo => ../driver/redigo
	github.com/locksmith-go/locksmith/driver/rueidis => ../driver/rueidis
	github.com/locksmith-go/locksmith/driver/valkeygo => ../driver/valkeygo
	github.com/locksmith-go/locksmith/otel => ../otel
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/golang/protobuf v1.5.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/gorilla/mux v1.8.0 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.16 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.1 // indirect
	github.com/prometheus/client_golang v1.13.0 // indirect
	github.com/prometheus/client_model v0.2.0 // indirect
	github.com/prometheus/common v0.37.0 // indirect
	github.com/prometheus/procfs v0.8.0 // indirect
	github.com/rs/xid v1.4.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	google.golang.org/protobuf v1.34.2 // indirect
	gopkg.in/tomb.v1 v1.0.0-20141024135613-dd632973f1e7 // indirect
)

require (
	github.com/Shopify/toxiproxy/v2 v2.5.0
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/gomodule/redigo v1.9.3
	github.com/locksmith-go/locksmith v0.1.0
	github.com/locksmith-go/locksmith/compat/redislock v0.1.0
	github.com/locksmith-go/locksmith/compat/redsync/redis/goredis v0.1.0
	github.com/locksmith-go/locksmith/compat/redsync/redis/redigo v0.1.0
	github.com/locksmith-go/locksmith/compat/redsync/redis/rueidis v0.1.0
	github.com/locksmith-go/locksmith/driver/goredis v0.1.0
	github.com/locksmith-go/locksmith/driver/redigo v0.1.0
	github.com/locksmith-go/locksmith/driver/rueidis v0.1.0
	github.com/locksmith-go/locksmith/driver/valkeygo v0.1.0
	github.com/locksmith-go/locksmith/otel v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/redis/rueidis/rueidiscompat v1.0.79
	github.com/rs/zerolog v1.28.0
	github.com/valkey-io/valkey-go v1.0.80
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	go.uber.org/goleak v1.3.0
)
