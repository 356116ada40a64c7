package editdist

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"comand", "command", 1}, {"evn", "env", 1}, {"kitten", "sitting", 3},
		{"ab", "ba", 1}, {"mcpServer", "mcpServers", 1}, {"héllo", "hello", 1},
	} {
		if d := Distance(tc.a, tc.b, 64); d != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
		if d := Distance(tc.b, tc.a, 64); d != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.b, tc.a, d, tc.d)
		}
	}
}
