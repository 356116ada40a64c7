package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemo runs the README's first command and checks that the story it
// tells happened: the crashed server came back on its own, the disabled one
// failed fast and came back when enabled.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"files    Connected -> Reconnecting (generation 1)",
		"files    Reconnecting -> Connected (generation 2)",
		"call files__read: files says hello",
		"files is Connected at generation 2",
		"call notes/search: error: mcpfleet: server disabled",
		"notes    Disabling -> Disabled",
		"call notes__search: notes says hello",
		"weather  Connected -> Closed",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}
