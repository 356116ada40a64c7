//go:build linux

package soak

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// summary writes the soak's figures as Markdown, ready to paste into
// BENCHMARKS.md: the command, the machine, every call by class, faults by
// kind with their recovery times, and each server's final state.
func (r *run) summary(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	recs, unprov, open := r.tr.snapshot()
	failures := r.led.failures()
	nFail := 0
	for _, g := range failures {
		nFail += g.count
	}

	r.led.mu.Lock()
	var total [numClasses]int
	for _, c := range r.led.byKind {
		for i, n := range c {
			total[i] += n
		}
	}
	byKind := cloneCounts(r.led.byKind)
	byServer := cloneCounts(r.led.byServer)
	examples := make(map[string]string, len(r.led.examples))
	for k, v := range r.led.examples {
		examples[k] = v
	}
	started := r.led.started
	r.led.mu.Unlock()
	calls := 0
	for _, n := range total {
		calls += n
	}

	verdict := "PASS"
	if nFail > 0 {
		verdict = fmt.Sprintf("FAIL (%d rule violations in %d groups)", nFail, len(failures))
	}
	p("### Soak, %v: %s", r.cfg.duration, verdict)
	p("")
	p("```sh")
	p("SOAK=%v SOAK_SEED=%d go test -race -count=1 -run '^TestSoak$' -v ./internal/testkit/soak/", r.cfg.duration, r.cfg.seed)
	p("```")
	p("")
	p("%d servers (%s), %d callers (echo, %v timeout each), a fault every %v–%v on a connected server; "+
		"%s %s/%s, %d CPUs, load average at the end %s.",
		len(r.fleet), r.mixLine(), r.cfg.callers, r.cfg.callTimeout, faultEveryMin, faultEveryMax,
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadavg())
	p("")

	p("| calls | %s | rule violations |", strings.Join(classNames[:], " | "))
	p("|---:|%s---:|", strings.Repeat("---:|", int(numClasses)))
	p("| %d | %s | %d |", calls, joinCounts(&total), nFail)
	if calls != started {
		p("")
		p("**%d calls started, %d accounted for.**", started, calls)
	}
	p("")

	faults := r.log.counts()
	nFaults := 0
	for _, n := range faults {
		nFaults += n
	}
	outages := r.outagesByKind()
	byFault := map[faultKind][]recovery{}
	for _, rc := range recs {
		byFault[rc.kind] = append(byFault[rc.kind], rc)
	}
	p("| fault | injected | caused an outage | recovered | median | p95 | worst (server) | worst after the server was back |")
	p("|---|---:|---:|---:|---:|---:|---|---|")
	kinds := make([]faultKind, 0, len(faultWeights)+1)
	for _, fw := range faultWeights {
		kinds = append(kinds, fw.kind)
	}
	kinds = append(kinds, unprovoked)
	var all []recovery
	for _, k := range kinds {
		rs := byFault[k]
		all = append(all, rs...)
		if k == unprovoked && len(rs) == 0 && len(unprov) == 0 {
			continue
		}
		injected, caused := fmt.Sprint(faults[k]), fmt.Sprint(outages[k])
		if k == unprovoked {
			injected, caused = "-", fmt.Sprint(len(unprov))
		}
		st := statsOf(rs)
		p("| %s | %s | %s | %d | %s | %s | %s | %s |", k, injected, caused, st.n, dur(st.median), dur(st.p95), worst(st), worstBack(st))
	}
	st := statsOf(all)
	p("| **all** | %d | | %d | %s | %s | %s | %s |", nFaults, st.n, dur(st.median), dur(st.p95), worst(st), worstBack(st))
	p("")
	p("Recovery: from the fault (for a toggle, the Enable) to the server's next `Connected` event; " +
		"\"after the server was back\" counts from the restarted server listening, the SIGCONT, the kill " +
		"(a respawn is the Manager's job) or the Reconnect call. A fault that caused no outage went " +
		"unnoticed by the state machine: a restart of a server that keeps no session, a hang shorter than the call timeout.")
	p("")

	p("| server kind | servers | calls | %s |", strings.Join(classNames[:], " | "))
	p("|---|---:|---:|%s", strings.Repeat("---:|", int(numClasses)))
	for _, k := range mix {
		c := byKind[string(k.kind)]
		p("| %s | %d | %d | %s |", k.kind, k.n, sum(c), joinCounts(c))
	}
	p("")

	r.survivors(p, byKind)
	r.sessionSummary(p)

	settled := fmt.Sprintf("all %d `Connected` %v after the faults stopped", len(r.fleet), dur(r.settledIn))
	if r.notConnected > 0 {
		settled = fmt.Sprintf("**%d of %d not `Connected` %v after the faults stopped**", r.notConnected, len(r.fleet), r.cfg.settle)
	}
	r.tr.mu.Lock()
	permFailed, dropped, closeErrors, closeErr := r.tr.permFailed, r.tr.dropped, r.tr.closeErrors, r.tr.closeErr
	r.tr.mu.Unlock()
	nLogs, topLogs := r.logs.counts.top(5)
	p("After the soak: %s; `PermanentlyFailed` entered %d times; %d outages still open; "+
		"%d events dropped; %d close errors; %d log records at Warn or above; Close took %s.",
		settled, permFailed, len(open), dropped, closeErrors, nLogs, dur(r.closeTook))
	if closeErr != "" {
		p("")
		p("First close error: `%s`", closeErr)
	}
	p("")

	p("<details><summary>Per server</summary>")
	p("")
	p("| server | faults | calls | ok | worst recovery | final state | generation |")
	p("|---|---|---:|---:|---:|---|---:|")
	worstBy := map[string]recovery{}
	for _, rc := range recs {
		if rc.took >= worstBy[rc.server].took {
			worstBy[rc.server] = rc
		}
	}
	for _, st := range r.final {
		c := byServer[st.Name]
		wr := "-"
		if w, ok := worstBy[st.Name]; ok {
			wr = fmt.Sprintf("%s (%s)", dur(w.took), w.kind)
		}
		p("| %s | %s | %d | %d | %s | %s | %d |", st.Name, r.faultsOf(st.Name), sum(c), c[classOK], wr, st.State, st.Generation)
	}
	p("")
	p("</details>")
	p("")

	if len(examples) > 0 {
		p("<details><summary>First error of each class, per server kind</summary>")
		p("")
		keys := sortedKeys(examples)
		for _, k := range keys {
			p("- %s: `%s`", k, strings.ReplaceAll(examples[k], "`", "'"))
		}
		p("")
		p("</details>")
		p("")
	}
	slow := slices.Clone(recs)
	slices.SortFunc(slow, func(a, b recovery) int { return cmp.Compare(b.sinceBack, a.sinceBack) })
	if len(slow) > 5 {
		slow = slow[:5]
	}
	if len(slow) > 0 {
		p("<details><summary>Slowest recoveries after the server was back</summary>")
		p("")
		for _, rc := range slow {
			what := string(rc.kind)
			if rc.fault != nil {
				what = r.log.describe(rc.fault, r.clock)
			}
			line := fmt.Sprintf("- %s after the server was back (%s in all), %s: %s", dur(rc.sinceBack), dur(rc.took), rc.server, what)
			if rc.failed > 0 {
				line += fmt.Sprintf("; %d failed dials, the last: %v", rc.failed, rc.last)
			}
			p("%s", line)
		}
		p("")
		p("</details>")
		p("")
	}
	if len(topLogs) > 0 {
		p("<details><summary>Most frequent log records (Warn and above; mcp-go's transports log through the Manager's logger)</summary>")
		p("")
		for _, l := range topLogs {
			p("- `%s`", strings.ReplaceAll(l, "`", "'"))
		}
		p("")
		p("</details>")
		p("")
	}
	if len(unprov) > 0 {
		p("<details><summary>Departures from Connected no fault explains</summary>")
		p("")
		for i, d := range unprov {
			if i == 20 {
				p("- … %d more", len(unprov)-i)
				break
			}
			p("- %s %s → %s: %v", r.clock.rel(d.at), d.server, d.to, d.cause)
		}
		p("")
		p("</details>")
	}
}

// survivors writes the ledger figure of the servers whose calls survive
// their connection (issue 27): their calls, how many ended with an unknown
// outcome (the target is none), and what the Manager did to get there.
func (r *run) survivors(p func(string, ...any), byKind map[string]*[numClasses]int) {
	var calls, unknown int
	var kinds []string
	for _, k := range mix {
		s := &member{kind: k.kind}
		if !s.survives() {
			continue
		}
		kinds = append(kinds, string(k.kind))
		if c := byKind[string(k.kind)]; c != nil {
			calls += sum(c)
			unknown += c[classOutcomeUnknown]
		}
	}
	var resumed, retries uint64
	cuts := 0
	for _, s := range r.fleet {
		if !s.survives() {
			continue
		}
		for _, st := range r.stats.Servers {
			if st.Name == s.name {
				resumed += st.Resumed
				retries += st.Retries
			}
		}
		cuts += r.log.countOf(s.name, faultCut)
	}
	// A stream that broke after an event ID and still could not be
	// resumed is logged at Warn: the calls that used resumption and lost
	// their outcome anyway. The other unknown outcomes are calls cut before
	// their answer began (no event ID yet, no task yet): nothing to resume.
	failed := r.logs.counts.matching("could not resume")
	p("Calls that survive their connection (%s: resumption, tasks): %d calls, **%d ended `ErrOutcomeUnknown`** (target 0), "+
		"under %d cuts of their connections; %d answer streams resumed (`Stats.Resumed`), **%d resumptions failed**; %d requests sent again.",
		strings.Join(kinds, ", "), calls, unknown, cuts, resumed, failed, retries)
	p("")
}

// outagesByKind counts the faults of each kind that caused an outage.
func (r *run) outagesByKind() map[faultKind]int {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	out := map[faultKind]int{}
	for _, f := range r.log.all {
		if f.outage || f.kind == faultToggle {
			out[f.kind]++
		}
	}
	return out
}

// faultsOf says which faults hit a server: "kill×3 toggle×1".
func (r *run) faultsOf(name string) string {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	n := map[string]int{}
	for _, f := range r.log.byServer[name] {
		n[string(f.kind)]++
	}
	if len(n) == 0 {
		return "-"
	}
	return serverCounts(n)
}

func (r *run) mixLine() string {
	parts := make([]string, 0, len(mix))
	for _, k := range mix {
		parts = append(parts, fmt.Sprintf("%d %s", k.n, k.kind))
	}
	return strings.Join(parts, ", ")
}

func cloneCounts(m map[string]*[numClasses]int) map[string]*[numClasses]int {
	out := make(map[string]*[numClasses]int, len(m))
	for k, v := range m {
		c := *v
		out[k] = &c
	}
	return out
}

func joinCounts(c *[numClasses]int) string {
	if c == nil {
		c = new([numClasses]int)
	}
	parts := make([]string, numClasses)
	for i, n := range c {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, " | ")
}

func sum(c *[numClasses]int) int {
	if c == nil {
		return 0
	}
	n := 0
	for _, x := range c {
		n += x
	}
	return n
}

func worst(st recoveryStats) string {
	if st.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s%s)", dur(st.max), st.worst.server, failedDials(st.worst))
}

// failedDials says what a recovery spent its time on, if it failed dials.
func failedDials(r recovery) string {
	if r.failed == 0 {
		return ""
	}
	return fmt.Sprintf(", %d failed dials", r.failed)
}

func worstBack(st recoveryStats) string {
	if st.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s%s)", dur(st.maxBack), st.worstBack.server, failedDials(st.worstBack))
}

// dur prints a duration at a precision that suits it.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// sortByCount sorts keys by their count, most first, then by name.
func sortByCount(keys []string, n map[string]int) {
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(n[b], n[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}
