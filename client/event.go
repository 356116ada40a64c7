package client

import (
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventState: the slot moved From -> To.
	EventState EventKind = iota
	// EventRetry: a dial failed and another is scheduled at NextRetry; the
	// state did not change.
	EventRetry
	// EventCatalog: the server's published catalog changed; Diff says how.
	EventCatalog
	// EventCloseError: closing a detached runtime failed. Teardown is not a
	// transaction: the state stays as it is and the budget is not charged.
	EventCloseError
	// EventCatalogError: refreshing a list after list_changed failed; the
	// last good list stays published.
	EventCatalogError
	// EventLog: the server sent a log message (notifications/message); Log
	// holds it. SetLevel chooses which levels it sends.
	EventLog
	// EventResourceUpdated: a resource the host subscribed to with
	// SubscribeResource changed (notifications/resources/updated); URI
	// names it, and may be a sub-resource of the one subscribed to.
	EventResourceUpdated
	// EventNotificationsDropped: the server sent notifications faster than
	// its Limits.NotificationRate, and Count of them (logs, progress,
	// resource updates, list_changed) were dropped since the last such
	// event; Err wraps ErrNotificationRate and names the limit. It comes at
	// once, then at most once a second while the server keeps it up, so it
	// cannot flood the host itself. A dropped list_changed is not lost: the
	// report starts the refresh it would have. A dropped resource update
	// is: a host that must not miss one reads its subscribed resources
	// again on this event.
	EventNotificationsDropped
	// EventServerRequestRefused: the server asked something of the host
	// (Method: sampling/createMessage, elicitation/create or roots/list)
	// beyond its Limits.MaxServerRequests or ServerRequestRate, and Count
	// such requests were refused since the last such event for the method;
	// Err is the last refusal, wrapping ErrServerRequestLimit and naming
	// the limit. Like EventNotificationsDropped it comes at most once a
	// second per server and method.
	EventServerRequestRefused
	// EventTaskCreated: the host started a task (StartTask, or a call run
	// as a task); Task describes it. Err is set if the TaskStore could not
	// save it (it is polled all the same, but would not outlive the
	// Manager).
	EventTaskCreated
	// EventTaskWorking, EventTaskInputRequired: a task's status changed
	// to working, or to input_required (the server waits for the host: its
	// requests go to the host's handlers).
	EventTaskWorking
	EventTaskInputRequired
	// EventTaskCompleted, EventTaskFailed, EventTaskCancelled,
	// EventTaskLost: a task ended, and its outcome is known: Task.Wait
	// returns at once. Err is the outcome's error, for all but completed.
	EventTaskCompleted
	EventTaskFailed
	EventTaskCancelled
	EventTaskLost
)

// noEvent is no kind of event: for code that may or may not emit one.
const noEvent EventKind = -1

var eventKindNames = [...]string{"state", "retry", "catalog", "close-error", "catalog-error", "log",
	"resource-updated", "notifications-dropped", "server-request-refused",
	"task-created", "task-working", "task-input-required", "task-completed", "task-failed",
	"task-cancelled", "task-lost"}

// taskEventKind is the event kind of a task's status.
func taskEventKind(st TaskStatus) EventKind {
	switch st {
	case TaskInputRequired:
		return EventTaskInputRequired
	case TaskCompleted:
		return EventTaskCompleted
	case TaskFailed:
		return EventTaskFailed
	case TaskCancelled:
		return EventTaskCancelled
	case TaskLost:
		return EventTaskLost
	}
	return EventTaskWorking
}

func (k EventKind) String() string {
	if k >= 0 && int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return "unknown"
}

// Event is one thing that happened to a server, in order.
type Event struct {
	Seq        uint64 // grows by one per event of this manager
	Time       time.Time
	Kind       EventKind
	Server     string
	From, To   lifecycle.State // for EventState; both the current state otherwise
	Generation uint64          // the slot's current (or last) runtime generation
	Attempt    int             // failed attempts in the current budget
	NextRetry  time.Time       // when the next dial is due; zero if none
	Err        error           // the cause, if any
	Diff       *snapshot.Diff  // for EventCatalog
	// Protocol is, for an EventState to Connected, the MCP protocol
	// version the new runtime speaks.
	Protocol string
	// Cached marks an EventCatalog whose catalog came from the catalog
	// cache (WithCatalogCache), not from the server.
	Cached bool
	Log    *LogMessage // for EventLog
	URI    string      // for EventResourceUpdated
	Method string      // for EventServerRequestRefused
	// Count is, for EventNotificationsDropped and EventServerRequestRefused,
	// how many were dropped or refused since the last event of its kind.
	Count uint64
	// AuthorizationURL is where the user authorizes the client, for an
	// EventState to NeedsAuthorization (empty if none could be made: Err
	// says why). Complete it with CompleteAuthorization.
	AuthorizationURL string
	// Task is, for the task events (EventTaskCreated and the kinds after
	// it), what the task's handle says of it as the event happened.
	Task *TaskInfo
	// Dropped counts the events this subscriber lost, because its buffer
	// was full, just before this one.
	Dropped uint64
}

// DefaultEventBuffer is the buffer of a subscription made with a
// non-positive size.
const DefaultEventBuffer = 256

// bus queues events and delivers them, in order, from one goroutine, so that
// nothing a subscriber does can stall a slot. Delivery never blocks: a
// subscriber whose buffer is full loses the event and learns how many it
// lost from the Dropped field of the next one it gets.
type bus struct {
	mu     sync.Mutex // guards queue, seq, closed
	queue  []Event
	seq    uint64
	closed bool
	wake   chan struct{} // capacity 1: "the queue is not empty"
	done   chan struct{} // closed when run returns

	subMu      sync.Mutex // guards subs, subsClosed and every send to a subscriber channel
	subs       map[*subscriber]struct{}
	subsClosed bool

	// observer, if set, is told of every state change, in order, by the
	// delivering goroutine: never under a slot's lock; and log writes the
	// lines of WithLogger, likewise.
	observer Observer
	log      *stateLog
}

type subscriber struct {
	ch      chan Event
	dropped uint64
	after   uint64 // events up to this Seq are not for it (Watch)
}

func newBus(o Observer, log *stateLog) *bus {
	return &bus{wake: make(chan struct{}, 1), done: make(chan struct{}), subs: map[*subscriber]struct{}{},
		observer: o, log: log}
}

// publish queues e. It may be called with a slot's lock held: it only takes
// the bus's own lock and never blocks.
func (b *bus) publish(e Event) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.seq++
	e.Seq = b.seq
	b.queue = append(b.queue, e)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// keptBatch is the most events a delivered batch keeps room for, to be
// reused as the next queue (an Event is about 240 bytes).
const keptBatch = 64

// run delivers queued events until close is called and the queue is empty.
func (b *bus) run() {
	defer close(b.done)
	var batch []Event
	for range b.wake {
		b.mu.Lock()
		batch, b.queue = b.queue, batch[:0]
		closed := b.closed
		b.mu.Unlock()
		b.deliver(batch)
		clear(batch)
		if cap(batch) > keptBatch {
			// A burst (a fleet connecting at once) grew it; the queue of a
			// fleet at rest need not keep that size for good.
			batch = nil
		}
		if closed {
			b.mu.Lock()
			rest := b.queue
			b.mu.Unlock()
			b.deliver(rest)
			b.subMu.Lock()
			for s := range b.subs {
				close(s.ch)
				delete(b.subs, s)
			}
			b.subsClosed = true
			b.subMu.Unlock()
			return
		}
	}
}

func (b *bus) deliver(events []Event) {
	if len(events) == 0 {
		return
	}
	if b.log != nil {
		for _, e := range events {
			b.log.write(e)
		}
	}
	if o := b.observer; o != nil {
		for _, e := range events {
			if e.Kind == EventState {
				o.StateChange(e.Server, e.From, e.To, e.Generation, e.Err)
			}
		}
	}
	b.subMu.Lock()
	defer b.subMu.Unlock()
	for _, e := range events {
		for s := range b.subs {
			if e.Seq <= s.after {
				continue
			}
			e.Dropped = s.dropped
			select {
			case s.ch <- e:
				s.dropped = 0
			default:
				s.dropped++
			}
		}
	}
}

func (b *bus) subscribe(buffer int) (<-chan Event, func()) {
	return b.subscribeAfter(buffer, 0)
}

// lastSeq returns the Seq of the last event published.
func (b *bus) lastSeq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// subscribeAfter subscribes to the events whose Seq is greater than after,
// including those still queued.
func (b *bus) subscribeAfter(buffer int, after uint64) (<-chan Event, func()) {
	if buffer <= 0 {
		buffer = DefaultEventBuffer
	}
	s := &subscriber{ch: make(chan Event, buffer), after: after}
	b.subMu.Lock()
	if b.subsClosed {
		close(s.ch)
	} else {
		b.subs[s] = struct{}{}
	}
	b.subMu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.subMu.Lock()
			if _, ok := b.subs[s]; ok {
				delete(b.subs, s)
				close(s.ch)
			}
			b.subMu.Unlock()
		})
	}
}

// close delivers what is queued, closes every subscription and waits for
// the delivery goroutine to return.
func (b *bus) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	<-b.done
}

// catalogEvent is the EventCatalog of a publisher's diff (snapshot.Diff is
// the Publisher's own type).
func catalogEvent(d catalog.Diff) Event {
	return Event{Kind: EventCatalog, Diff: &d}
}
