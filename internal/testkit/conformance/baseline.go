// Package conformance runs the client scenarios of the MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in testdata/conformance) against
// the client in ./client, which is built on the Manager, and holds the outcome
// to the committed baseline.json: every scenario passes except the expected
// failures it lists, each with the reason.
package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
)

// Baseline is what the suite is expected to say about the client.
type Baseline struct {
	// Suite is the version of @modelcontextprotocol/conformance the baseline
	// was taken with; its scenario list changes with the version.
	Suite string `json:"suite"`
	// Pass lists the scenarios that must pass.
	Pass []string `json:"pass"`
	// ExpectedFailures maps each scenario known to fail to why it fails.
	ExpectedFailures map[string]string `json:"expectedFailures"`
	// Notes says more about a passing scenario where its pass means less
	// than it seems.
	Notes map[string]string `json:"notes,omitempty"`
}

// LoadBaseline reads a baseline file and checks that no scenario is both
// expected to pass and to fail.
func LoadBaseline(path string) (Baseline, error) {
	var b Baseline
	data, err := os.ReadFile(path)
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range b.Pass {
		if _, ok := b.ExpectedFailures[s]; ok {
			return b, fmt.Errorf("%s: %q is both in pass and in expectedFailures", path, s)
		}
	}
	return b, nil
}

// Result is one scenario's outcome.
type Result struct {
	Scenario string
	Passed   bool
	// Detail says why a scenario failed: the failed checks, the client's
	// exit status and the end of its stderr.
	Detail string
}

// Report is how a run differs from the baseline.
type Report struct {
	// Regressions are scenarios that failed without being expected to:
	// those in Pass and those the baseline does not name.
	Regressions []Result
	// NewlyPassing are expected failures that passed: the baseline can be
	// tightened by moving them to Pass.
	NewlyPassing []string
	// Unlisted are scenarios that passed but that the baseline does not
	// name; they belong in Pass.
	Unlisted []string
	// Missing are scenarios in the baseline that did not run: the suite no
	// longer has them, and the baseline is stale.
	Missing []string
}

// Failed reports whether the run breaks the baseline: a scenario failed that
// was not expected to, or one the baseline names did not run. Newly passing
// and unlisted passing scenarios do not fail it.
func (r Report) Failed() bool {
	return len(r.Regressions) > 0 || len(r.Missing) > 0
}

// Compare holds results to b.
func Compare(b Baseline, results []Result) Report {
	var r Report
	ran := map[string]bool{}
	for _, res := range results {
		ran[res.Scenario] = true
		_, expectFail := b.ExpectedFailures[res.Scenario]
		listed := expectFail || slices.Contains(b.Pass, res.Scenario)
		switch {
		case !res.Passed && !expectFail:
			r.Regressions = append(r.Regressions, res)
		case res.Passed && expectFail:
			r.NewlyPassing = append(r.NewlyPassing, res.Scenario)
		case res.Passed && !listed:
			r.Unlisted = append(r.Unlisted, res.Scenario)
		}
	}
	for _, s := range b.Pass {
		if !ran[s] {
			r.Missing = append(r.Missing, s)
		}
	}
	for s := range b.ExpectedFailures {
		if !ran[s] {
			r.Missing = append(r.Missing, s)
		}
	}
	sort.Strings(r.Missing)
	return r
}
