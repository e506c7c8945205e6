module github.com/locksmith-go/locksmith/redlocktest

go 1.26.0

replace github.com/locksmith-go/locksmith => ../

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/locksmith-go/locksmith v0.1.0
	go.uber.org/goleak v1.3.0
)

require github.com/yuin/gopher-lua v1.1.1 // indirect
