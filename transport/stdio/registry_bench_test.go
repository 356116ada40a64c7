package stdio

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkRegistry is what the state file costs a fleet of n children:
// n spawns, each recorded while the earlier ones still run, then n reaps,
// then Close. Registry operations alone (record and remove, what add and
// the exit watcher call once the start time is read), no process. It
// reports the cost per spawn (a record and its remove); linear in n, that
// is flat across n.
//
//	go test -run '^$' -bench '^BenchmarkRegistry$' -benchtime 3x -count 6 ./transport/stdio/
func BenchmarkRegistry(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("spawns=%d", n), func(b *testing.B) {
			groups := make([]groupRecord, n)
			for i := range groups {
				groups[i] = groupRecord{PID: 5_000_001 + i, PGID: 5_000_001 + i, Start: fmt.Sprintf("linux:8d3f0c1e-7a2b-4c5d-9e6f-0a1b2c3d4e5f:%d", 100000+i), Command: "server"}
			}
			dir := b.TempDir()
			entries := make([]*registered, n)
			for b.Loop() {
				r, err := OpenRegistry(filepath.Join(dir, "state.json"))
				if err != nil {
					b.Fatal(err)
				}
				for i, g := range groups {
					entries[i] = r.record(g)
				}
				for _, e := range entries {
					r.remove(e)
				}
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/spawn")
		})
	}
}
