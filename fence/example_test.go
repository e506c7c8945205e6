package fence_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"

	"github.com/locksmith-go/locksmith/fence"
	"github.com/locksmith-go/locksmith/internal/resp"
)

// The protected side accepts a write only with a token at least the
// highest it has seen: here a holder with token 7 writes, then a holder
// whose lock expired long ago tries with token 5.
func ExampleMemory() {
	var ledger fence.Memory
	fmt.Println(ledger.Accept("ledger", 7))
	fmt.Println(ledger.Accept("ledger", 7)) // the same holder again
	err := ledger.Accept("ledger", 5)
	fmt.Println(errors.Is(err, fence.ErrStale), ledger.Highest("ledger"))
	// Output:
	// <nil>
	// <nil>
	// true 7
}

// Do runs the write under the fence's mutex, so that no write with another
// token interleaves between the check and the write.
func ExampleMemory_Do() {
	var fences fence.Memory
	balance := 0
	deposit := func(token uint64, amount int) error {
		return fences.Do("account:7", token, func() error {
			balance += amount
			return nil
		})
	}
	fmt.Println(deposit(2, 100))
	fmt.Println(errors.Is(deposit(1, 50), fence.ErrStale))
	fmt.Println("balance:", balance)
	// Output:
	// <nil>
	// true
	// balance: 100
}

// Script guards a write to Redis with a fence kept in Redis, in one atomic
// step. The fence key and the written key share a hash tag, so a Redis
// Cluster keeps them in one slot.
func ExampleScript() {
	srv := miniredis.NewMiniRedis() // a program uses its own Redis client
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := resp.Dial(srv.Addr())
	defer rdb.Close()

	ctx := context.Background()
	keys := []string{"{ledger}:fence", "{ledger}:balance"}
	write := func(token, value string) any {
		reply, err := rdb.Eval(ctx, fence.Script, keys, []string{token, value})
		if err != nil {
			log.Fatal(err)
		}
		return reply
	}
	fmt.Println("token 3 writes:", write("3", "100"))
	fmt.Println("token 2 writes:", write("2", "0"))
	balance, _ := srv.Get("{ledger}:balance")
	fmt.Println("balance:", balance)
	// Output:
	// token 3 writes: 1
	// token 2 writes: 0
	// balance: 100
}
