package http

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
)

func TestIsServerClosedIdle(t *testing.T) {
	closedIdle := errors.New(errServerClosedIdleText) // net/http's, unexported
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{closedIdle, true},
		{fmt.Errorf("failed to send request: %w", &url.Error{Op: "Post", URL: "http://x", Err: closedIdle}), true},
		{errors.New("EOF"), false},
		{fmt.Errorf("failed: %w", &url.Error{Op: "Post", URL: "http://x", Err: errors.New("connection reset by peer")}), false},
		{nil, false},
	} {
		if got := isServerClosedIdle(tc.err); got != tc.want {
			t.Errorf("isServerClosedIdle(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
