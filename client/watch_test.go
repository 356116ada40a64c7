package client

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// A host that watches after a server connected sees nothing of what came
// before: the first event it gets is the next change.
func TestWatchDeliversOnlyLaterEvents(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	statuses, seq, events, cancel := m.Watch(64)
	defer cancel()
	if len(statuses) != 1 || statuses[0].State != lifecycle.Connected || seq == 0 {
		t.Fatalf("Watch listed %+v at seq %d, want s Connected", statuses, seq)
	}
	if err := m.Disable(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	e := <-events
	if e.Seq <= seq || e.Kind != EventState || e.From != lifecycle.Connected || e.To != lifecycle.Disabling {
		t.Fatalf("first event after Watch: %+v, want Connected -> Disabling after seq %d", e, seq)
	}
}

// The list plus the events after it reproduce any later list, whatever was
// happening while Watch was called.
func TestWatchReplayReproducesStatuses(t *testing.T) {
	const servers = 6
	m := newTestManager(t)
	var tss []*testServer
	for i := range servers {
		ts := newTestServer()
		tss = append(tss, ts)
		mustAdd(t, m, "s"+strconv.Itoa(i), ServerSpec{Dialer: ts.dialer()})
	}
	r := rand.New(rand.NewPCG(1, 2))
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	// Churn: kills and toggles, bounded in count, until told to stop.
	wg.Go(func() {
		ctx := testCtx(t)
		for i := 0; i < 2000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n := r.IntN(servers)
			name := "s" + strconv.Itoa(n)
			switch r.IntN(3) {
			case 0:
				tss[n].Kill(nil)
			case 1:
				_ = m.Disable(ctx, name)
			case 2:
				_ = m.Enable(ctx, name)
			}
		}
	})
	type state struct {
		st  lifecycle.State
		gen uint64
	}
	for round := range 20 {
		list, seq, events, cancel := m.Watch(1 << 16)
		replayed := map[string]state{}
		for _, st := range list {
			replayed[st.Name] = state{st.State, st.Generation}
		}
		later, seq2, _, cancel2 := m.Watch(1)
		cancel2()
		for seq < seq2 {
			e := <-events
			if e.Dropped != 0 {
				t.Fatalf("round %d: %d events dropped", round, e.Dropped)
			}
			if e.Seq <= seq {
				t.Fatalf("round %d: event %d delivered after the list at %d", round, e.Seq, seq)
			}
			seq = e.Seq
			if e.Kind == EventState {
				replayed[e.Server] = state{e.To, e.Generation}
			}
		}
		cancel()
		for _, st := range later {
			if got := replayed[st.Name]; got != (state{st.State, st.Generation}) {
				t.Fatalf("round %d: %s replayed to %v generation %d, listed %v generation %d",
					round, st.Name, got.st, got.gen, st.State, st.Generation)
			}
		}
	}
	close(stop)
	wg.Wait()
}
