module github.com/locksmith-go/locksmith/compat

go 1.25.0

require github.com/locksmith-go/locksmith v0.0.0-00010101000000-000000000000

replace github.com/locksmith-go/locksmith => ../
