//go:build linux

package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
)

// class is what a call ended in. Every call ends in exactly one.
type class int

const (
	classOK             class = iota // the answer, exactly the caller's
	classOutcomeUnknown              // client.ErrOutcomeUnknown: in flight when its runtime was lost
	classUnavailable                 // *client.UnavailableError: the server was down
	classDisabled                    // client.ErrDisabled: the server was toggled off
	classDeadline                    // the call's own context ended
	classFailed                      // anything else: a wrong answer, another error
	numClasses
)

var classNames = [numClasses]string{"ok", "outcome unknown", "unavailable", "disabled", "own deadline", "failed"}

func (c class) String() string { return classNames[c] }

// classify puts a call's result in its class. want is the exact answer
// expected; ctxErr is the call's own context's error when it returned. For
// classFailed it says what was wrong.
//
// The order matters only for an error that wraps more than one sentinel,
// which the contract (issue 17) says must not happen; sentinels() shows
// every one an error wraps, so such a case is visible in the report.
func classify(res *mcp.CallToolResult, err, ctxErr error, want string) (class, string) {
	if err == nil {
		if res == nil {
			return classFailed, "nil result and nil error"
		}
		got, one := textOf(res)
		switch {
		case res.IsError:
			return classFailed, fmt.Sprintf("tool error (isError): %q", got)
		case !one || got != want:
			return classFailed, fmt.Sprintf("wrong answer: got %q (%d content items), want %q", got, len(res.Content), want)
		}
		return classOK, ""
	}
	var unavailable *client.UnavailableError
	switch {
	case errors.Is(err, client.ErrOutcomeUnknown), errors.Is(err, client.ErrTaskLost):
		// A task its server no longer knows may or may not have run:
		// Stats count it as an unknown outcome too.
		return classOutcomeUnknown, ""
	case errors.As(err, &unavailable):
		return classUnavailable, ""
	case errors.Is(err, client.ErrDisabled):
		return classDisabled, ""
	case ctxErr != nil && errors.Is(err, ctxErr):
		return classDeadline, ""
	}
	return classFailed, "error outside the classes"
}

// textOf returns the text of a result and whether it was exactly one text
// item.
func textOf(res *mcp.CallToolResult) (string, bool) {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		} else {
			fmt.Fprintf(&b, "<%T>", c)
		}
	}
	if len(res.Content) != 1 {
		return b.String(), false
	}
	_, ok := res.Content[0].(mcp.TextContent)
	return b.String(), ok
}

// knownErrors are the sentinels a report names when an error wraps them,
// so that a failure says at once which contract it breaks.
var knownErrors = []struct {
	name string
	err  error
}{
	{"ErrOutcomeUnknown", client.ErrOutcomeUnknown},
	{"ErrUnavailable", client.ErrUnavailable},
	{"ErrDisabled", client.ErrDisabled},
	{"ErrPermanentlyFailed", client.ErrPermanentlyFailed},
	{"ErrClosed", client.ErrClosed},
	{"ErrServerError", client.ErrServerError},
	{"ErrUnknownServer", client.ErrUnknownServer},
	{"ErrToolNotFound", client.ErrToolNotFound},
	{"ErrTooManyTimeouts", client.ErrTooManyTimeouts},
	{"context.DeadlineExceeded", context.DeadlineExceeded},
	{"context.Canceled", context.Canceled},
	{"mcptransport.ErrTransportClosed", mcptransport.ErrTransportClosed},
	{"mcptransport.ErrSessionTerminated", mcptransport.ErrSessionTerminated},
	{"io.EOF", io.EOF},
	{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF},
	{"ECONNREFUSED", syscall.ECONNREFUSED},
	{"ECONNRESET", syscall.ECONNRESET},
	{"EPIPE", syscall.EPIPE},
}

// sentinels lists the known sentinels err wraps.
func sentinels(err error) string {
	var names []string
	for _, k := range knownErrors {
		if errors.Is(err, k.err) {
			names = append(names, k.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// chain lists the types in err's tree, depth first, for a report that has
// to say where an error came from.
func chain(err error) string {
	var types []string
	var walk func(error, int)
	walk = func(e error, depth int) {
		if e == nil || len(types) > 24 {
			return
		}
		types = append(types, strings.Repeat(">", depth)+fmt.Sprintf("%T", e))
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x, depth+1)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), depth+1)
		}
	}
	walk(err, 0)
	return strings.Join(types, " ")
}

// rule is what a failure broke.
type rule string

const (
	ruleWrong        rule = "wrong answer"
	ruleToolError    rule = "tool error result"
	ruleOther        rule = "error outside the classes"
	ruleUnknownBare  rule = "ErrOutcomeUnknown with no fault in flight"
	ruleDisabledBare rule = "ErrDisabled outside a toggle"
	ruleLate         rule = "returned over 1s after its context ended"
	ruleStuck        rule = "call did not return"
	ruleNotConnected rule = "not Connected 10s after the faults stopped"
	rulePermFailed   rule = "entered PermanentlyFailed"
	ruleFinal        rule = "call after the fleet recovered failed"
	ruleFault        rule = "fault or API call failed"
	ruleChild        rule = "child process left after Close"
	ruleClose        rule = "Close failed"
	ruleLog          rule = "manager logged an error"
	ruleLeftOver     rule = "calls not accounted for"
	ruleLeak         rule = "goroutine leak after Close"
	ruleSession      rule = "a session the server still held replaced after a cut, partition or hang alone"
)

// Slack of the rules about timing.
const (
	// lateLimit is how long a call may outlive its context.
	lateLimit = time.Second
	// inFlightSlack extends a fault's span when deciding whether a call was
	// in flight at it: the Manager notices a dead child or stream within
	// milliseconds, a second is generous on a loaded machine, and a call
	// that started later than that met a runtime the Manager should have
	// known to be dead or a fresh one.
	inFlightSlack = time.Second
)

// failure is one broken rule.
type failure struct {
	rule   rule
	server *member // nil when it is about no one server
	fault  *fault  // in flight or the last before; nil if none
	// faultNote says how fault relates to the call: "in flight" or how long
	// before.
	faultNote string
	at        time.Time
	detail    string
	// errText is the error's text, the part of the grouping key that says
	// what went wrong.
	errText string
}

// group gathers failures of one rule, server kind, fault kind and error
// text, so that a thousand calls that hit one bug make one report line.
type group struct {
	first   failure
	count   int
	servers map[string]int
}

// call is one call of a caller, from start to its end.
type call struct {
	id       uint64
	server   *member
	caller   int // -1 for the calls after the fleet recovered
	arg      string
	start    time.Time
	deadline time.Time
}

// ledger accounts for every call and keeps the failures.
type ledger struct {
	clock *clock
	log   *faultLog

	mu       sync.Mutex // guards everything below
	nextID   uint64
	inflight map[uint64]*call
	started  int
	byKind   map[string]*[numClasses]int // by server kind
	byServer map[string]*[numClasses]int // by server name
	examples map[string]string           // class + "/" + kind → the first such error, in full
	groups   map[string]*group
	order    []string // group keys in order of first occurrence
}

func newLedger(c *clock, log *faultLog) *ledger {
	return &ledger{clock: c, log: log, inflight: map[uint64]*call{},
		byKind: map[string]*[numClasses]int{}, byServer: map[string]*[numClasses]int{},
		examples: map[string]string{}, groups: map[string]*group{}}
}

// begin registers a call about to be sent.
func (l *ledger) begin(s *member, caller int, arg string, deadline time.Time) *call {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	c := &call{id: l.nextID, server: s, caller: caller, arg: arg, start: time.Now(), deadline: deadline}
	l.inflight[c.id] = c
	l.started++
	return c
}

// end accounts for a call that returned: its class, and every rule it broke.
func (l *ledger) end(c *call, res *mcp.CallToolResult, err, ctxErr error) class {
	end := time.Now()
	name := c.server.name
	cl, why := classify(res, err, ctxErr, c.server.answer(c.arg))

	var fs []failure
	add := func(r rule, f *fault, extra string) {
		fs = append(fs, l.callFailure(r, c, end, f, extra, err, ctxErr))
	}
	inFlight := l.log.overlapping(name, c.start, end, inFlightSlack)
	switch cl {
	case classFailed:
		r := ruleOther
		switch {
		case err == nil && res != nil && res.IsError:
			r = ruleToolError
		case err == nil:
			r = ruleWrong
		}
		add(r, inFlight, why)
	case classOutcomeUnknown:
		if inFlight == nil {
			add(ruleUnknownBare, nil, "")
		}
	case classDisabled:
		if f := l.log.overlapping(name, c.start, end, 0, faultToggle); f == nil {
			add(ruleDisabledBare, inFlight, "")
		}
	}
	if late := end.Sub(c.deadline); late > lateLimit {
		add(ruleLate, inFlight, fmt.Sprintf("returned %v after its deadline, class %s", late.Round(time.Millisecond), cl))
	}
	if c.caller < 0 && cl != classOK {
		add(ruleFinal, inFlight, "class "+cl.String())
	}

	l.mu.Lock()
	delete(l.inflight, c.id)
	countsLocked(l.byKind, string(c.server.kind))[cl]++
	countsLocked(l.byServer, name)[cl]++
	if key := cl.String() + "/" + string(c.server.kind); err != nil || cl == classFailed {
		if _, ok := l.examples[key]; !ok {
			text := why
			if err != nil {
				text = err.Error()
			}
			l.examples[key] = text
		}
	}
	l.mu.Unlock()
	for _, f := range fs {
		l.fail(f)
	}
	return cl
}

// countsLocked returns the class counts under key, creating them.
func countsLocked(m map[string]*[numClasses]int, key string) *[numClasses]int {
	if m[key] == nil {
		m[key] = new([numClasses]int)
	}
	return m[key]
}

// callFailure builds the failure of a call, with the fault that explains
// it best: the one in flight, else the last before the call ended.
func (l *ledger) callFailure(r rule, c *call, end time.Time, f *fault, extra string, err, ctxErr error) failure {
	note := "in flight"
	if f == nil {
		f = l.log.latestBefore(c.server.name, end)
		switch {
		case f == nil:
			note = "no fault on this server before"
		default:
			l.log.mu.Lock()
			fend := f.end
			l.log.mu.Unlock()
			note = fmt.Sprintf("last fault ended %v before the call started", c.start.Sub(fend).Round(time.Millisecond))
		}
	}
	who := fmt.Sprintf("caller %d", c.caller)
	if c.caller < 0 {
		who = "the check after recovery"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "call echo(%q) by %s, %s..%s (%v)", c.arg, who, l.clock.rel(c.start), l.clock.rel(end),
		end.Sub(c.start).Round(time.Millisecond))
	if extra != "" {
		b.WriteString(": " + extra)
	}
	errText := extra
	if err != nil {
		errText = err.Error()
		fmt.Fprintf(&b, "\n        error: %s\n        wraps: %s\n        chain: %s", err, sentinels(err), chain(err))
	}
	// Whether the caller's own context had ended tells a cancellation the
	// caller asked for from one the Manager or a transport made up.
	if ctxErr != nil {
		fmt.Fprintf(&b, "\n        own context: %v, %v after its deadline", ctxErr, end.Sub(c.deadline).Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "\n        own context: not done, %v before its deadline", c.deadline.Sub(end).Round(time.Millisecond))
	}
	return failure{rule: r, server: c.server, fault: f, faultNote: note, at: end, detail: b.String(), errText: errText}
}

// fail records a failure.
func (l *ledger) fail(f failure) {
	if f.at.IsZero() {
		f.at = time.Now()
	}
	k, fk := kind("-"), faultKind("-")
	server := ""
	if f.server != nil {
		k, server = f.server.kind, f.server.name
	}
	if f.fault != nil {
		fk = f.fault.kind
		if f.faultNote != "in flight" {
			fk += " (before)"
		}
	}
	key := strings.Join([]string{string(f.rule), string(k), string(fk), fold(f.errText, server)}, "\x00")
	l.mu.Lock()
	defer l.mu.Unlock()
	g, ok := l.groups[key]
	if !ok {
		g = &group{first: f, servers: map[string]int{}}
		l.groups[key] = g
		l.order = append(l.order, key)
	}
	g.count++
	if server != "" {
		g.servers[server]++
	}
}

var (
	quoted = regexp.MustCompile(`"[^"]*"`)
	digits = regexp.MustCompile(`[0-9]+`)
)

// fold makes error texts that differ only in names, ids, ports and times
// compare equal.
func fold(text, server string) string {
	if server != "" {
		text = strings.ReplaceAll(text, server, "<server>")
	}
	text = quoted.ReplaceAllString(text, `"…"`)
	return digits.ReplaceAllString(text, "N")
}

// unaccounted returns the calls started that never ended.
func (l *ledger) unaccounted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.inflight)
}

// stuck returns the calls in flight that started before t.
func (l *ledger) stuck(before time.Time) []*call {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*call
	for _, c := range l.inflight {
		if c.start.Before(before) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *call) int { return a.start.Compare(b.start) })
	return out
}

// failures returns the failure groups, in order of first occurrence.
func (l *ledger) failures() []*group {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*group, 0, len(l.order))
	for _, k := range l.order {
		out = append(out, l.groups[k])
	}
	return out
}

// clock turns times into offsets from the soak's start, the one timeline
// every line of a report uses.
type clock struct{ t0 time.Time }

func (c *clock) rel(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("+%.3fs", t.Sub(c.t0).Seconds())
}
