package frame

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mark3labs/mcp-go/mcp"
)

// readAll reads r to the end as a client would, through a bufio.Reader
// with small reads, and returns what came out.
func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	br := bufio.NewReaderSize(r, 16)
	var out strings.Builder
	if _, err := io.Copy(&out, br); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func limiter(in string, framing Framing, limit int64, chunk func(io.Reader) io.Reader) (*Limiter, *TooLargeAnswers) {
	var answers TooLargeAnswers
	return NewLimiter(chunk(strings.NewReader(in)), framing, limit, &answers, slog.New(slog.DiscardHandler)), &answers
}

var chunkings = map[string]func(io.Reader) io.Reader{
	"whole":    func(r io.Reader) io.Reader { return r },
	"one byte": iotest.OneByteReader,
	"halves":   iotest.HalfReader,
}

func TestLinesUnderTheLimitPassUnchanged(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + strings.Repeat("x", 63) + "\n\n" + `{"a":1}` + "\n"
	for name, chunk := range chunkings {
		l, answers := limiter(in, Lines, 64, chunk)
		if got := readAll(t, l); got != in {
			t.Errorf("%s: got %q", name, got)
		}
		if take(t, answers, "1") != nil {
			t.Errorf("%s: an answer under the limit was recorded", name)
		}
	}
}

func TestALineOverTheLimitAnswersItsRequest(t *testing.T) {
	big := strings.Repeat("y", 500)
	for _, tc := range []struct {
		name, line, id string
	}{
		{"id first (Go servers)", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + big + `"}]}}`, "7"},
		{"id last (TypeScript servers)", `{"result":{"text":"` + big + `"},"jsonrpc":"2.0","id":7}`, "7"},
		{"string id after the value", `{"result":{"t":"` + big + `"}, "id" : "a\"b", "jsonrpc":"2.0"}`, `"a\"b"`},
		{"error answer", `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"` + big + `"}}`, `"x"`},
	} {
		for name, chunk := range chunkings {
			in := tc.line + "\n" + `{"jsonrpc":"2.0","id":8,"result":{}}` + "\n"
			l, answers := limiter(in, Lines, 100, chunk)
			got := readAll(t, l)
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if len(lines) != 3 {
				t.Fatalf("%s/%s: %d lines out: %q", tc.name, name, len(lines), got)
			}
			if len(lines[0]) > 100 || !strings.HasPrefix(tc.line, lines[0]) {
				t.Errorf("%s/%s: the cut line is not the start of the message within the limit: %q", tc.name, name, lines[0])
			}
			if !strings.Contains(lines[1], `"error"`) || !strings.Contains(lines[1], "message too large") {
				t.Errorf("%s/%s: no error answer: %q", tc.name, name, lines[1])
			}
			if lines[2] != `{"jsonrpc":"2.0","id":8,"result":{}}` {
				t.Errorf("%s/%s: the next message changed: %q", tc.name, name, lines[2])
			}
			e := take(t, answers, tc.id)
			if e == nil || e.Size != int64(len(tc.line)) || e.Limit != 100 {
				t.Errorf("%s/%s: recorded %+v for id %s, want size %d", tc.name, name, e, tc.id, len(tc.line))
			}
		}
	}
}

// A notification or a server's request over the limit is dropped: there is
// no request of ours to fail, and an error "answer" with the server's id
// could fail a request of ours that has the same id.
func TestAMessageThatAnswersNothingIsOnlyDropped(t *testing.T) {
	big := strings.Repeat("z", 300)
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"x":"` + big + `"}}`,
		`not json at all ` + big,
	} {
		l, answers := limiter(line+"\n"+`{"ok":1}`+"\n", Lines, 100, iotest.HalfReader)
		got := readAll(t, l)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 2 || lines[1] != `{"ok":1}` || strings.Contains(got, "too large") {
			t.Errorf("%.40q...: got %q", line, got)
		}
		if take(t, answers, "3") != nil {
			t.Errorf("%.40q...: recorded an answer", line)
		}
	}
}

func TestAnEventOverTheLimitAnswersItsRequest(t *testing.T) {
	big := strings.Repeat("e", 400)
	in := "event: message\r\nid: 1\r\ndata: " + `{"jsonrpc":"2.0","id":4,"result":{"t":"` + big + `"}}` + "\r\n\r\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n"
	for name, chunk := range chunkings {
		l, answers := limiter(in, Events, 120, chunk)
		got := readAll(t, l)
		events := strings.Split(strings.TrimRight(strings.ReplaceAll(got, "\r", ""), "\n"), "\n\n")
		if len(events) != 3 {
			t.Fatalf("%s: %d events: %q", name, len(events), got)
		}
		if !strings.HasPrefix(events[1], `data: {"jsonrpc":"2.0","id":4,"error"`) {
			t.Errorf("%s: no error answer event: %q", name, events[1])
		}
		if events[2] != "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}" {
			t.Errorf("%s: the next event changed: %q", name, events[2])
		}
		if e := take(t, answers, "4"); e == nil || e.Limit != 120 || e.Size < 400 {
			t.Errorf("%s: recorded %+v", name, e)
		}
	}
}

// However long the message, the Limiter holds a bounded amount of it.
func TestTheLimiterHoldsLittle(t *testing.T) {
	const size = 8 << 20
	src := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":"`),
		io.LimitReader(repeatReader('a'), size), strings.NewReader("\"}\n"))
	var answers TooLargeAnswers
	l := NewLimiter(src, Lines, 1<<10, &answers, slog.New(slog.DiscardHandler))
	n, err := io.Copy(io.Discard, l)
	if err != nil {
		t.Fatal(err)
	}
	if n > 2<<10 {
		t.Fatalf("passed on %d bytes of an 8 MiB message with a 1 KiB limit", n)
	}
	if c := cap(l.raw) + cap(l.head) + cap(l.tail) + cap(l.pending); c > 64<<10 {
		t.Fatalf("holds %d bytes", c)
	}
	if e := take(t, &answers, "1"); e == nil || e.Size != size+int64(len(`{"jsonrpc":"2.0","id":1,"result":"`)+2) {
		t.Fatalf("recorded %+v", e)
	}
}

// take is answers.Take by the id as it appears in JSON.
func take(t *testing.T, answers *TooLargeAnswers, rawID string) *TooLarge {
	t.Helper()
	var id mcp.RequestId
	if err := json.Unmarshal([]byte(rawID), &id); err != nil {
		t.Fatal(err)
	}
	return answers.Take(id.String())
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestErrorsPassThrough(t *testing.T) {
	boom := errors.New("boom")
	var answers TooLargeAnswers
	l := NewLimiter(iotest.ErrReader(boom), Lines, 10, &answers, slog.New(slog.DiscardHandler))
	if _, err := l.Read(make([]byte, 4)); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	_ = bytes.MinRead
}

// TestLimiterAfterTheEnd: a Limiter gives its buffers back at the end of
// its stream and answers every later Read with the same error, so that an
// HTTP response stream costs no read buffer of its own.
func TestLimiterAfterTheEnd(t *testing.T) {
	var answers TooLargeAnswers
	for range 3 { // the second and third take the first's buffers
		l := NewLimiter(strings.NewReader("data: {\"a\":1}\n\n"), Events, 1<<10, &answers, slog.New(slog.DiscardHandler))
		out, err := io.ReadAll(l)
		if err != nil || string(out) != "data: {\"a\":1}\n\n" {
			t.Fatalf("read %q, %v", out, err)
		}
		if n, err := l.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("Read after the end = %d, %v; want 0, EOF", n, err)
		}
		if l.raw != nil || l.rawp != nil {
			t.Fatal("the buffers were not given back")
		}
	}
}
