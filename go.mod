module github.com/locksmith-go/locksmith

go 1.25.0
