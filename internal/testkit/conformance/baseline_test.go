package conformance

import (
	"fmt"
	"slices"
	"testing"
)

func TestCompare(t *testing.T) {
	b := Baseline{
		Pass:             []string{"initialize", "tools_call", "gone"},
		ExpectedFailures: map[string]string{"auth/a": "no OAuth", "auth/b": "no OAuth"},
	}
	r := Compare(b, []Result{
		{Scenario: "initialize", Passed: true},
		{Scenario: "tools_call", Passed: false, Detail: "tool not called"},
		{Scenario: "auth/a", Passed: false},
		{Scenario: "auth/b", Passed: true},
		{Scenario: "new-pass", Passed: true},
		{Scenario: "new-fail", Passed: false},
	})
	var regressions []string
	for _, res := range r.Regressions {
		regressions = append(regressions, res.Scenario)
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"Regressions", regressions, []string{"tools_call", "new-fail"}},
		{"NewlyPassing", r.NewlyPassing, []string{"auth/b"}},
		{"Unlisted", r.Unlisted, []string{"new-pass"}},
		{"Missing", r.Missing, []string{"gone"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !r.Failed() {
		t.Error("Failed() = false with regressions")
	}
	if Compare(b, nil).Failed() != true {
		t.Error("a run without the baseline's scenarios does not fail")
	}
}

func TestLoadBaseline(t *testing.T) {
	b, err := LoadBaseline("baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	if b.Suite == "" || len(b.Pass) == 0 {
		t.Fatalf("baseline.json has no suite version or no passing scenario: %+v", b)
	}
	for s, why := range b.ExpectedFailures {
		if why == "" {
			t.Errorf("expected failure %s has no reason", s)
		}
	}
}

// A newly passing expected failure is reported but does not fail the run; a
// scenario that should pass and failed does.
func ExampleCompare() {
	b := Baseline{
		Pass:             []string{"initialize"},
		ExpectedFailures: map[string]string{"auth/metadata-default": "no OAuth client"},
	}
	r := Compare(b, []Result{
		{Scenario: "initialize", Passed: true},
		{Scenario: "auth/metadata-default", Passed: true},
	})
	fmt.Println(r.Failed(), r.NewlyPassing)

	r = Compare(b, []Result{
		{Scenario: "initialize", Passed: false},
		{Scenario: "auth/metadata-default", Passed: false},
	})
	fmt.Println(r.Failed(), r.Regressions[0].Scenario)
	// Output:
	// false [auth/metadata-default]
	// true initialize
}
