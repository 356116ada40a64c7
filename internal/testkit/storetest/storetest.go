// Package storetest is the conformance suite of store.Shared: every
// implementation (store.Memory, store/redis, store/postgres) runs it
// against a real instance, so that they all keep the same promises:
// credentials keyed by user, server and issuer, fenced writes, leases that
// exclude, expire and wake their waiters, cooldowns claimed by one replica
// at a time, wake-ups, catalogs, task handles by scope, and errors that
// name the store. RunTasks is its TaskStore part, which the file and
// memory task stores run too.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/store"
)

// Factory returns a fresh, empty store for t (two calls for one t may
// share the backing server: Run asks for one store per subtest, and a
// second for the tests that need two clients of one store, via Pair).
type Factory func(t *testing.T) store.Shared

// Pair returns two clients of one backing store, as two replicas have.
type Pair func(t *testing.T) (store.Shared, store.Shared)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// Run runs the suite.
func Run(t *testing.T, pair Pair) {
	t.Run("Tokens", func(t *testing.T) { tokens(t, pair) })
	t.Run("TokenKeysApart", func(t *testing.T) { tokenKeysApart(t, pair) })
	t.Run("Fence", func(t *testing.T) { fence(t, pair) })
	t.Run("LeaseExcludes", func(t *testing.T) { leaseExcludes(t, pair) })
	t.Run("LeaseWakes", func(t *testing.T) { leaseWakes(t, pair) })
	t.Run("LeaseExpires", func(t *testing.T) { leaseExpires(t, pair) })
	t.Run("Cooldown", func(t *testing.T) { cooldown(t, pair) })
	t.Run("Catalogs", func(t *testing.T) { catalogs(t, pair) })
	t.Run("ErrorsNameTheStore", func(t *testing.T) { errorsNameStore(t, pair) })
	t.Run("Tasks", func(t *testing.T) {
		RunTasks(t, func(t *testing.T) store.TaskStore {
			a, _ := pair(t)
			return a.Tasks("scope-1")
		})
	})
	t.Run("TasksScoped", func(t *testing.T) { tasksScoped(t, pair) })
}

func tokens(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	k1 := store.TokenKey{User: "alice", Server: "gh", Issuer: "https://as1.example"}
	k2 := store.TokenKey{User: "alice", Server: "gh", Issuer: "https://as2.example"}
	if _, ok, err := a.LoadToken(c, k1); ok || err != nil {
		t.Fatalf("empty store: ok=%v err=%v", ok, err)
	}
	if err := a.SaveToken(c, k1, store.TokenRecord{Data: []byte(`{"n":1}`), Fence: 1}); err != nil {
		t.Fatal(err)
	}
	// The other replica reads it, by issuer and as the bound one.
	for _, k := range []store.TokenKey{k1, {User: "alice", Server: "gh"}} {
		r, ok, err := b.LoadToken(c, k)
		if err != nil || !ok || string(r.Data) != `{"n":1}` || r.Fence != 1 {
			t.Fatalf("LoadToken(%v) = %q %d %v %v", k, r.Data, r.Fence, ok, err)
		}
	}
	// Another user, another server: nothing.
	for _, k := range []store.TokenKey{{User: "bob", Server: "gh"}, {User: "alice", Server: "gl"}, {Server: "gh"}} {
		if _, ok, err := b.LoadToken(c, k); ok || err != nil {
			t.Errorf("LoadToken(%v): ok=%v err=%v", k, ok, err)
		}
	}
	// A second issuer is kept apart and becomes the bound one.
	if err := b.SaveToken(c, k2, store.TokenRecord{Data: []byte(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	if r, ok, _ := a.LoadToken(c, store.TokenKey{User: "alice", Server: "gh"}); !ok || string(r.Data) != `{"n":2}` {
		t.Errorf("bound record after a save for another issuer: %q", r.Data)
	}
	if r, ok, _ := a.LoadToken(c, k1); !ok || string(r.Data) != `{"n":1}` {
		t.Errorf("the first issuer's record: %q %v", r.Data, ok)
	}
	if err := a.DeleteTokens(c, "alice", "gh"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []store.TokenKey{k1, k2, {User: "alice", Server: "gh"}} {
		if _, ok, err := b.LoadToken(c, k); ok || err != nil {
			t.Errorf("after DeleteTokens, LoadToken(%v): ok=%v err=%v", k, ok, err)
		}
	}
}

// tokenKeysApart: users and servers whose names hold the characters a
// store might join or escape them with are kept apart: (alice, crm:eu) is
// never (alice:crm, eu).
func tokenKeysApart(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	keys := []store.TokenKey{
		{User: "alice", Server: "crm:eu"}, {User: "alice:crm", Server: "eu"},
		{User: "alice", Server: "crm/eu"}, {User: "alice/crm", Server: "eu"},
		{User: "alice", Server: "crm%3Aeu"}, {User: "alice%3Acrm", Server: "eu"},
		{User: "alice", Server: "crm eu"}, {User: "alice crm", Server: "eu"},
		{User: "", Server: "alice:crm:eu"}, {User: "alice:crm:eu", Server: ""},
	}
	for i, k := range keys {
		k.Issuer = "https://as.example"
		if err := a.SaveToken(c, k, store.TokenRecord{Data: []byte{'0' + byte(i)}, Fence: 1}); err != nil {
			t.Fatalf("SaveToken(%v): %v", k, err)
		}
	}
	check := func(deleted int) {
		t.Helper()
		for i, k := range keys {
			r, ok, err := b.LoadToken(c, k)
			switch {
			case err != nil:
				t.Errorf("LoadToken(%v): %v", k, err)
			case i == deleted && ok:
				t.Errorf("LoadToken(%v) after its DeleteTokens: %q", k, r.Data)
			case i != deleted && (!ok || string(r.Data) != string([]byte{'0' + byte(i)})):
				t.Errorf("LoadToken(%v) = %q %v, want its own record %q", k, r.Data, ok, []byte{'0' + byte(i)})
			}
		}
	}
	check(-1)
	if err := a.DeleteTokens(c, keys[1].User, keys[1].Server); err != nil {
		t.Fatal(err)
	}
	check(1)
}

func fence(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	k := store.TokenKey{User: "u", Server: "s", Issuer: "https://as.example"}
	l1, err := a.Acquire(c, "grant", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(c, l1); err != nil {
		t.Fatal(err)
	}
	l2, err := b.Acquire(c, "grant", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(c, l2)
	if l2.Fence <= l1.Fence {
		t.Fatalf("fences %d then %d: not increasing", l1.Fence, l2.Fence)
	}
	if err := b.SaveToken(c, k, store.TokenRecord{Data: []byte("new"), Fence: l2.Fence}); err != nil {
		t.Fatal(err)
	}
	// The old holder, late: refused, and the record stays.
	err = a.SaveToken(c, k, store.TokenRecord{Data: []byte("old"), Fence: l1.Fence})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a save under an older fence: %v, want ErrFenced", err)
	}
	if r, _, _ := a.LoadToken(c, k); string(r.Data) != "new" {
		t.Errorf("record after the fenced save: %q", r.Data)
	}
	// The same fence again is the holder's own next write.
	if err := b.SaveToken(c, k, store.TokenRecord{Data: []byte("newer"), Fence: l2.Fence}); err != nil {
		t.Errorf("a second save under the same fence: %v", err)
	}
}

func leaseExcludes(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	var holders, most atomic.Int32
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]bool{}
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for range 5 {
				l, err := s.Acquire(c, "x", time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				n := holders.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				mu.Lock()
				if seen[l.Fence] {
					t.Errorf("fence %d given twice", l.Fence)
				}
				seen[l.Fence] = true
				mu.Unlock()
				holders.Add(-1)
				if err := s.Release(c, l); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders at once", most.Load())
	}
}

// A waiter gets the lease when it is released, long before its ttl.
func leaseWakes(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t) // far shorter than the ttl below
	l, err := a.Acquire(c, "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := b.Acquire(c, "w", time.Hour)
		if err == nil {
			err = b.Release(c, l2)
		}
		got <- err
	}()
	// The waiter must not get it while it is held; nothing to wait on for
	// "is waiting", so the release may come before or after it waits.
	if err := a.Release(c, l); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v (the release did not wake it within the test's deadline)", err)
	}
}

// A lease its holder never releases is taken over once it expires.
func leaseExpires(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	l, err := a.Acquire(c, "e", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := b.Acquire(c, "e", time.Minute)
	if err != nil {
		t.Fatalf("takeover after expiry: %v", err)
	}
	if l2.Fence <= l.Fence {
		t.Errorf("takeover fence %d after %d", l2.Fence, l.Fence)
	}
	// The old holder's release does not end the new lease.
	if err := a.Release(c, l); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(c, 200*time.Millisecond)
	defer cancel()
	if l3, err := a.Acquire(short, "e", time.Minute); err == nil {
		t.Errorf("acquired %v while the takeover holds it", l3)
	}
	if err := b.Release(c, l2); err != nil {
		t.Fatal(err)
	}
}

func cooldown(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	const srv = "upstream-1"
	if cd, err := a.Cooldown(c, srv); err != nil || cd.Attempts != 0 || !cd.Until.IsZero() {
		t.Fatalf("no cooldown yet: %+v %v", cd, err)
	}
	until := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	next := store.Cooldown{Attempts: 1, Until: until}
	okA, errA := a.ClaimDial(c, srv, store.Cooldown{}, next)
	okB, errB := b.ClaimDial(c, srv, store.Cooldown{}, next)
	if errA != nil || errB != nil || !okA || okB {
		t.Fatalf("two claims of one step: %v %v, %v %v; want exactly the first", okA, errA, okB, errB)
	}
	cd, err := b.Cooldown(c, srv)
	if err != nil || cd.Attempts != 1 || !cd.Until.Equal(until) {
		t.Fatalf("cooldown after the claim: %+v %v, want %+v", cd, err, next)
	}
	up, stop := b.WatchUp(srv)
	defer stop()
	other, stopOther := b.WatchUp("upstream-2")
	defer stopOther()
	if err := a.ServerUp(c, srv); err != nil {
		t.Fatal(err)
	}
	select {
	case <-up:
	case <-c.Done():
		t.Fatal("ServerUp woke no watcher of another client")
	}
	select {
	case <-other:
		t.Error("a watcher of another server was woken")
	default:
	}
	if cd, _ := b.Cooldown(c, srv); cd.Attempts != 0 {
		t.Errorf("cooldown after ServerUp: %+v", cd)
	}
}

func catalogs(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	if _, ok, err := a.LoadCatalog(c, "k"); ok || err != nil {
		t.Fatalf("empty: %v %v", ok, err)
	}
	doc := bytes.Repeat([]byte("x"), 100_000)
	if err := a.SaveCatalog(c, "k", doc); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.LoadCatalog(c, "k")
	if err != nil || !ok || !bytes.Equal(got, doc) {
		t.Fatalf("LoadCatalog: %d bytes, %v, %v", len(got), ok, err)
	}
}

func errorsNameStore(t *testing.T, pair Pair) {
	a, _ := pair(t)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	k := store.TokenKey{User: "u", Server: "s", Issuer: "https://as.example"}
	errs := map[string]error{}
	_, _, errs["LoadToken"] = a.LoadToken(done, k)
	errs["SaveToken"] = a.SaveToken(done, k, store.TokenRecord{Data: []byte("secret-token-data")})
	_, errs["Acquire"] = a.Acquire(done, "n", time.Minute)
	_, errs["Cooldown"] = a.Cooldown(done, "s")
	_, errs["ClaimDial"] = a.ClaimDial(done, "s", store.Cooldown{}, store.Cooldown{Attempts: 1})
	_, _, errs["LoadCatalog"] = a.LoadCatalog(done, "k")
	for op, err := range errs {
		var oe *store.Error
		switch {
		case err == nil:
			t.Errorf("%s with a cancelled context: no error", op)
		case !errors.As(err, &oe) || !strings.Contains(err.Error(), a.Name()):
			t.Errorf("%s: %v does not name the store %q", op, err, a.Name())
		case !errors.Is(err, context.Canceled):
			t.Errorf("%s: %v does not wrap the context's error", op, err)
		case strings.Contains(err.Error(), "secret-token-data"):
			t.Errorf("%s: %v shows the record", op, err)
		}
	}
}

// RunTasks runs the TaskStore part of the suite on the stores mk makes
// (each call a fresh, empty one): save, replace, load, delete, copies,
// and errors that name the store and the record. Run runs it on the
// shared store's Tasks, and checks that scopes are kept apart.
func RunTasks(t *testing.T, mk func(t *testing.T) store.TaskStore) {
	t.Run("Contract", func(t *testing.T) { tasksContract(t, mk(t)) })
}

func taskRecord(server, id string) store.TaskRecord {
	return store.TaskRecord{
		Server: server, TaskID: id, Tool: "build", Protocol: "2025-11-25", Status: "working",
		Started: time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC), TTL: time.Minute, PollInterval: time.Second,
		Answered: []string{"name"}, Result: json.RawMessage(`{"content":[]}`),
		SessionID: "session-1", SessionProtocol: "2025-11-25", ServerIdentity: "0123abcd",
	}
}

// TaskKeys returns the sorted keys of rs.
func TaskKeys(rs []store.TaskRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key())
	}
	slices.Sort(out)
	return out
}

func tasksContract(t *testing.T, s store.TaskStore) {
	c := ctx(t)
	got, err := s.LoadTasks(c)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty store: %v, %v", got, err)
	}
	a, b := taskRecord("github", "t-1"), taskRecord("files", "t/2 ü")
	for _, r := range []store.TaskRecord{a, b} {
		if err := s.SaveTask(c, r); err != nil {
			t.Fatal(err)
		}
	}
	a.Status, a.RequestState = "input_required", "opaque"
	if err := s.SaveTask(c, a); err != nil {
		t.Fatal(err)
	}
	a.Answered[0] = "changed after the save" // the store kept its own copy
	got, err = s.LoadTasks(c)
	if err != nil {
		t.Fatal(err)
	}
	if k := TaskKeys(got); !slices.Equal(k, []string{"files/t/2 ü", "github/t-1"}) {
		t.Fatalf("keys = %v", k)
	}
	for _, r := range got {
		if r.Server == "github" && (r.Status != "input_required" || r.RequestState != "opaque" ||
			!slices.Equal(r.Answered, []string{"name"}) || r.TTL != time.Minute || string(r.Result) != `{"content":[]}` ||
			!r.Started.Equal(a.Started) ||
			r.SessionID != "session-1" || r.SessionProtocol != "2025-11-25" || r.ServerIdentity != "0123abcd") {
			t.Fatalf("loaded %+v", r)
		}
	}
	if err := s.DeleteTask(c, "github", "t-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTask(c, "github", "t-1"); err != nil {
		t.Fatalf("deleting nothing: %v", err)
	}
	got, err = s.LoadTasks(c)
	if err != nil || !slices.Equal(TaskKeys(got), []string{"files/t/2 ü"}) {
		t.Fatalf("after delete: %v, %v", TaskKeys(got), err)
	}
	if err := s.SaveTask(c, store.TaskRecord{Server: "github"}); err == nil {
		t.Error("a record without a task id was saved")
	}
	done, cancel := context.WithCancel(c)
	cancel()
	err = s.SaveTask(done, a)
	var se *store.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || se.Op != "save task" || !strings.HasSuffix(se.Key, "github/t-1") {
		t.Fatalf("save with an ended context: %v", err)
	}
	if strings.Contains(err.Error(), "opaque") {
		t.Errorf("the error shows the record: %v", err)
	}
}

// tasksScoped: one shared store, two scopes, two clients: each scope sees
// its own records only, and the other client sees them too.
func tasksScoped(t *testing.T, pair Pair) {
	a, b := pair(t)
	c := ctx(t)
	alice, bob := a.Tasks("alice"), b.Tasks("bob")
	if err := alice.SaveTask(c, taskRecord("gh", "a-1")); err != nil {
		t.Fatal(err)
	}
	if err := bob.SaveTask(c, taskRecord("gh", "b-1")); err != nil {
		t.Fatal(err)
	}
	got, err := b.Tasks("alice").LoadTasks(c)
	if err != nil || !slices.Equal(TaskKeys(got), []string{"gh/a-1"}) {
		t.Fatalf("alice's tasks read by the other client: %v, %v", TaskKeys(got), err)
	}
	got, err = a.Tasks("bob").LoadTasks(c)
	if err != nil || !slices.Equal(TaskKeys(got), []string{"gh/b-1"}) {
		t.Fatalf("bob's tasks: %v, %v", TaskKeys(got), err)
	}
	if err := b.Tasks("alice").DeleteTask(c, "gh", "b-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := bob.LoadTasks(c); len(got) != 1 {
		t.Errorf("a delete in alice's scope removed bob's task: %v", TaskKeys(got))
	}
}

// Corrupter writes garbage where a store keeps a record, as a fault of
// the disk or another program writing there would: what the store's API
// cannot write. Each implementation knows where its records are.
type Corrupter struct {
	// TokenFence makes the fence of the record under k unreadable.
	TokenFence func(t *testing.T, k store.TokenKey)
	// Task writes garbage as the record of scope's task server/taskID.
	Task func(t *testing.T, scope, server, taskID string)
}

// RunCorrupt checks that a corrupt record is reported (an *store.Error
// that wraps store.ErrCorrupt, names the store and the record and quotes
// nothing of it) and ignored, never trusted: the good records beside it
// still load, and a good write replaces it.
func RunCorrupt(t *testing.T, pair Pair, c Corrupter) {
	t.Run("TokenFence", func(t *testing.T) {
		a, b := pair(t)
		cx := ctx(t)
		k := store.TokenKey{User: "u", Server: "s", Issuer: "https://as.example"}
		if err := a.SaveToken(cx, k, store.TokenRecord{Data: []byte("secret-document"), Fence: 3}); err != nil {
			t.Fatal(err)
		}
		c.TokenFence(t, k)
		_, ok, err := b.LoadToken(cx, k)
		checkCorrupt(t, a, err, "secret-document")
		if ok {
			t.Error("a record with a corrupt fence was returned")
		}
		if err := b.SaveToken(cx, k, store.TokenRecord{Data: []byte("good"), Fence: 1}); err != nil {
			t.Fatalf("a good write over a corrupt record: %v", err)
		}
		if r, ok, err := a.LoadToken(cx, k); err != nil || !ok || string(r.Data) != "good" || r.Fence != 1 {
			t.Errorf("after the good write: %q %d %v %v", r.Data, r.Fence, ok, err)
		}
	})
	t.Run("Task", func(t *testing.T) {
		a, b := pair(t)
		cx := ctx(t)
		good := taskRecord("gh", "good")
		if err := a.Tasks("alice").SaveTask(cx, good); err != nil {
			t.Fatal(err)
		}
		if err := a.Tasks("alice").SaveTask(cx, taskRecord("gh", "bad")); err != nil {
			t.Fatal(err)
		}
		c.Task(t, "alice", "gh", "bad")
		got, err := b.Tasks("alice").LoadTasks(cx)
		checkCorrupt(t, a, err, `"server"`)
		if err != nil && !strings.Contains(err.Error(), "bad") {
			t.Errorf("the error does not name the record: %v", err)
		}
		if !slices.Equal(TaskKeys(got), []string{"gh/good"}) {
			t.Errorf("loaded %v, want the good record alone", TaskKeys(got))
		}
		// Left alone: reported again, until a good write replaces it.
		if _, err := b.Tasks("alice").LoadTasks(cx); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("a second load: %v", err)
		}
		if err := b.Tasks("alice").SaveTask(cx, taskRecord("gh", "bad")); err != nil {
			t.Fatal(err)
		}
		if got, err := a.Tasks("alice").LoadTasks(cx); err != nil || len(got) != 2 {
			t.Errorf("after the good write: %v %v", TaskKeys(got), err)
		}
	})
}

// checkCorrupt checks err is the report of a corrupt record of s's.
func checkCorrupt(t *testing.T, s store.Shared, err error, content string) {
	t.Helper()
	var se *store.Error
	switch {
	case !errors.Is(err, store.ErrCorrupt):
		t.Errorf("%v, want ErrCorrupt", err)
	case !errors.As(err, &se) || !strings.Contains(err.Error(), s.Name()):
		t.Errorf("%v does not name the store %q", err, s.Name())
	case strings.Contains(err.Error(), content):
		t.Errorf("%v quotes the record", err)
	}
}
