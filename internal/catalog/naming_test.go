package catalog

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// providerName is the tool name rule of the LLM provider APIs.
var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestQualify(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5)
	tests := []struct {
		name        string
		n           Naming
		prefix      string
		tool        string
		want        string // exact, when the plain form applies
		wantShortOf string // when the short form applies: its readable start
	}{
		{name: "default separator", prefix: "github", tool: "create_issue", want: "github__create_issue"},
		{name: "custom separator", n: Naming{Separator: "-"}, prefix: "github", tool: "create_issue", want: "github-create_issue"},
		{name: "exactly 64", prefix: "p", tool: strings.Repeat("t", 61), want: "p__" + strings.Repeat("t", 61)},
		{name: "65 is too long", prefix: "p", tool: strings.Repeat("t", 62), wantShortOf: "p__ttttt"},
		{name: "long", prefix: "github", tool: long, wantShortOf: "github__very_long_tool_name_"},
		{name: "dots and slashes", prefix: "fs", tool: "files/read.v2", wantShortOf: "fs__files_read_v2-"},
		{name: "unicode", prefix: "wiki", tool: "suche_größe", wantShortOf: "wiki__suche_gr__e-"},
		{name: "invalid separator", n: Naming{Separator: "."}, prefix: "a", tool: "b", wantShortOf: "a_b-"},
		{name: "invalid prefix", prefix: "my server", tool: "b", wantShortOf: "my_server__b-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.n.Qualify(tt.prefix, tt.tool)
			if !providerName.MatchString(got) || !ValidToolName(got) {
				t.Fatalf("Qualify = %q, not a valid tool name", got)
			}
			if tt.want != "" && got != tt.want {
				t.Fatalf("Qualify = %q, want %q", got, tt.want)
			}
			if tt.wantShortOf != "" {
				if !strings.HasPrefix(got, tt.wantShortOf) || !regexp.MustCompile(`-[0-9a-f]{12}$`).MatchString(got) {
					t.Fatalf("Qualify = %q, want a short form starting %q", got, tt.wantShortOf)
				}
			}
			if again := (Naming{Separator: tt.n.Separator}).Qualify(tt.prefix, tt.tool); again != got {
				t.Fatalf("not stable: %q then %q", got, again)
			}
		})
	}
}

func TestQualifyDistinguishesLookalikes(t *testing.T) {
	// Pairs that read the same once sanitized or joined must still differ.
	var n Naming
	pairs := [][4]string{
		{"fs", "a.b", "fs", "a/b"},
		{"fs", "a.b", "fs", "a_b"}, // the second is plain, the first short
		{"a_", "b" + strings.Repeat("x", 70), "a", "_b" + strings.Repeat("x", 70)},
		{"s", strings.Repeat("x", 80) + "1", "s", strings.Repeat("x", 80) + "2"},
	}
	for _, p := range pairs {
		a, b := n.Qualify(p[0], p[1]), n.Qualify(p[2], p[3])
		if a == b {
			t.Errorf("Qualify(%q,%q) = Qualify(%q,%q) = %q", p[0], p[1], p[2], p[3], a)
		}
	}
}

// TestQualifyProperties checks, over many random names, the three promises of
// Qualify: every result is a valid provider tool name, distinct inputs give
// distinct names, and the same input always gives the same name.
func TestQualifyProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
		"ab_-.:/ ",
		"aé日本語🙂\x00\xff",
	}
	randName := func() string {
		alpha := []rune(alphabets[rng.IntN(len(alphabets))])
		n := rng.IntN(90)
		var b strings.Builder
		for range n {
			b.WriteRune(alpha[rng.IntN(len(alpha))])
		}
		return b.String()
	}
	for _, n := range []Naming{{}, {Separator: "_"}, {Separator: "."}} {
		seen := map[string][2]string{}
		for range 8000 {
			prefix := []string{"github", "fs", "a", randName()}[rng.IntN(4)]
			tool := randName()
			q := n.Qualify(prefix, tool)
			if !providerName.MatchString(q) {
				t.Fatalf("Qualify(%q, %q) = %q: invalid", prefix, tool, q)
			}
			if q2 := n.Qualify(prefix, tool); q2 != q {
				t.Fatalf("Qualify(%q, %q) unstable: %q, %q", prefix, tool, q, q2)
			}
			in := [2]string{prefix, tool}
			if prev, ok := seen[q]; ok && prev != in {
				// Distinct pairs that join to the same plain text are
				// a real collision the Publisher quarantines; anything
				// else is a bug.
				sep := n.SeparatorOrDefault()
				if joined := prefix + sep + tool; prev[0]+sep+prev[1] != joined || q != joined {
					t.Fatalf("Qualify(%q) and Qualify(%q) both = %q", prev, in, q)
				}
			}
			seen[q] = in
		}
	}
}
