package store_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/store"
)

// Two replicas share one grant: the one holding the lease writes under
// its fence; the other, late with an older fence, is refused.
func ExampleMemory() {
	ctx := context.Background()
	s := store.NewMemory()
	k := store.TokenKey{User: "alice", Server: "github", Issuer: "https://auth.example.com"}
	old, _ := s.Acquire(ctx, "grant", time.Minute)
	_ = s.Release(ctx, old)
	cur, _ := s.Acquire(ctx, "grant", time.Minute)
	fmt.Println(s.SaveToken(ctx, k, store.TokenRecord{Data: []byte(`{}`), Fence: cur.Fence}))
	fmt.Println(s.SaveToken(ctx, k, store.TokenRecord{Data: []byte(`{}`), Fence: old.Fence}))
	// Output:
	// <nil>
	// memory store: save token alice/github@https://auth.example.com: fenced off: the record was written under a newer lease
}
