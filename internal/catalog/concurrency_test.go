package catalog

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentReadersAndWriters runs readers against writers that publish,
// unpublish and forget, under -race. Readers check that every View they load
// is internally consistent and that versions never go back.
func TestConcurrentReadersAndWriters(t *testing.T) {
	p := NewPublisher(Naming{})
	const writers, readers, rounds = 4, 4, 120
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, readers)

	for r := range readers {
		wg.Go(func() {
			var last uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				v := p.View()
				if v.Version() < last {
					errs <- fmt.Errorf("reader %d: version went back %d → %d", r, last, v.Version())
					return
				}
				last = v.Version()
				tools := v.Tools()
				for i, tl := range tools {
					if i > 0 && tools[i-1].Qualified >= tl.Qualified {
						errs <- fmt.Errorf("reader %d: tools not sorted at %d", r, i)
						return
					}
					if got, ok := v.Tool(tl.Qualified); !ok || got.Server != tl.Server {
						errs <- fmt.Errorf("reader %d: index disagrees on %s", r, tl.Qualified)
						return
					}
					if _, ok := v.Catalog(tl.Server); !ok {
						errs <- fmt.Errorf("reader %d: tool %s without its catalog", r, tl.Qualified)
						return
					}
				}
			}
		})
	}

	var wwg sync.WaitGroup
	for w := range writers {
		wwg.Go(func() {
			for i := range rounds {
				server := fmt.Sprintf("s%d", (w*7+i)%10)
				gen := uint64(i/3 + 1)
				switch i % 5 {
				case 0, 1, 2:
					p.Publish(cat(server, gen, "shared", fmt.Sprintf("t%d", i%4)), "x")
				case 3:
					p.Unpublish(server, gen)
				case 4:
					if i%25 == 4 {
						p.Forget(server)
					}
				}
				// A waiter on Changed must be woken: each writer makes a
				// real change of its own server and waits on the View before it.
				v := p.View()
				if _, ok := p.Publish(cat(fmt.Sprintf("waker%d", w), uint64(i+1), fmt.Sprintf("w%d", i)), ""); !ok {
					t.Error("waker publish ignored")
					return
				}
				<-v.Changed()
			}
		})
	}
	wwg.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Whatever the interleaving, every quarantined tool names a holder that
	// the View really lists under that name.
	v := p.View()
	for _, q := range v.Quarantined() {
		if holder, ok := v.Tool(q.Qualified); !ok || holder.Server != q.Holder || !strings.HasPrefix(q.Server, "s") {
			t.Errorf("quarantine %+v, View holder %+v", q, holder)
		}
	}
}
