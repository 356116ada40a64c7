package gateway

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadUpTo checks the HTTP front's body reader against what it
// replaced, io.ReadAll of an io.LimitReader of limit+1 (io.ReadAll alone
// without a limit): the same bytes whatever the Content-Length says (right,
// too small, too large, absent), whatever the size against the limit, and
// however the body hands its bytes out; a Content-Length that no data
// backs earns no buffer larger than preallocMax.
func TestReadUpTo(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 10<<10) // 160 KiB
	for _, limit := range []int64{0, 1, 16, 100, 4 << 10, 200 << 10} {
		for _, size := range []int{0, 1, 15, 16, 17, 99, 100, 101, 512, 513, 4 << 10, 70 << 10, len(data)} {
			body := data[:size]
			want := body
			if limit > 0 && int64(len(want)) > limit+1 {
				want = want[:limit+1]
			}
			for _, cl := range []int64{int64(size), -1, int64(size / 2), int64(size) + 7} {
				for name, r := range map[string]func() io.Reader{
					"whole":   func() io.Reader { return bytes.NewReader(body) },
					"onebyte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(body)) },
					"dataeof": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(body)) },
				} {
					if name == "onebyte" && size > 4<<10 {
						continue // slow under -race, and no different
					}
					got, err := readUpTo(r(), limit, cl)
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("limit %d, size %d, Content-Length %d, %s: got %d bytes, %v; want %d bytes",
							limit, size, cl, name, len(got), err, len(want))
					}
				}
			}
		}
	}

	// A Content-Length of a terabyte and four bytes behind it.
	got, err := readUpTo(bytes.NewReader([]byte("{}\n ")), 0, 1<<40)
	if err != nil || string(got) != "{}\n " || cap(got) > preallocMax {
		t.Fatalf("huge Content-Length: %q (cap %d), %v", got, cap(got), err)
	}
	got, err = readUpTo(bytes.NewReader([]byte("{}")), 4<<20, 1<<40)
	if err != nil || string(got) != "{}" || cap(got) > preallocMax {
		t.Fatalf("huge Content-Length under a limit: %q (cap %d), %v", got, cap(got), err)
	}

	// A body that breaks: its error, as io.ReadAll gives it.
	broken := errors.New("connection reset")
	_, err = readUpTo(io.MultiReader(bytes.NewReader(data[:300]), iotest.ErrReader(broken)), 1<<10, 600)
	if !errors.Is(err, broken) {
		t.Fatalf("broken body: %v, want %v", err, broken)
	}
}
