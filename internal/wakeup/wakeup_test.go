package wakeup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/wakeup"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A wake-up reaches the waiters of its subject only; stopped waiters are
// forgotten; WakeAll reaches everyone; a waker never blocks.
func TestSet(t *testing.T) {
	var s wakeup.Set
	a, stopA := s.Watch("a")
	b, stopB := s.Watch("b")
	defer stopB()
	s.Wake("a")
	s.Wake("a") // a second wake-up before the first is taken: not blocked
	select {
	case <-a:
	default:
		t.Fatal("the waiter of a was not woken")
	}
	select {
	case <-b:
		t.Fatal("the waiter of b was woken by a's wake-up")
	default:
	}
	stopA()
	s.Wake("a") // nobody left: no effect
	select {
	case <-a:
		t.Fatal("a stopped waiter was woken")
	default:
	}
	s.WakeAll()
	select {
	case <-b:
	default:
		t.Fatal("WakeAll did not wake b")
	}
}

func TestWait(t *testing.T) {
	woken := make(chan struct{}, 1)
	woken <- struct{}{}
	if err := wakeup.Wait(t.Context(), woken, time.Hour); err != nil {
		t.Fatalf("woken: %v", err)
	}
	if err := wakeup.Wait(t.Context(), nil, time.Millisecond); err != nil {
		t.Fatalf("timer: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := wakeup.Wait(ctx, nil, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// A waiter registers before it checks what it waits for, so that a
// wake-up between the check and the wait is not lost.
func ExampleSet() {
	var s wakeup.Set
	up, stop := s.Watch("server-1")
	defer stop()
	s.Wake("server-1") // another replica: the server is back
	<-up
	// Output:
}
