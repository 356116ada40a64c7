//go:build linux

package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
)

// npmDir is the npm project that pins the suite and the Node 22 it needs.
const npmDir = "testdata/conformance"

// scenarioTimeout bounds one scenario, the suite's own 30 s client timeout
// included; the client gives up after 20 s.
const scenarioTimeout = 60 * time.Second

// TestClientSuite runs every client scenario of the pinned conformance suite,
// one at a time (sse-retry measures reconnect timing to ±200 ms, so scenarios
// do not compete for the CPU), against the client in ./client and compares
// the outcome with baseline.json.
func TestClientSuite(t *testing.T) {
	root := npmtest.Root()
	dir := filepath.Join(root, npmDir, "node_modules")
	node := filepath.Join(dir, ".bin", "node")
	cli := filepath.Join(dir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			missing(t, p+" is not installed")
		}
	}
	b, err := LoadBaseline("baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	if v := installedVersion(t, dir); v != b.Suite {
		t.Fatalf("installed @modelcontextprotocol/conformance is %s, baseline.json is for %s: run npm ci --prefix %s, or take a new baseline", v, b.Suite, npmDir)
	}

	bin := buildClient(t)
	scenarios := listScenarios(t, node, cli)
	start := time.Now()
	var results []Result
	for _, s := range scenarios {
		res := runScenario(t, node, cli, bin, s)
		outcome := "pass"
		if _, expected := b.ExpectedFailures[s]; !res.Passed && expected {
			outcome = "fail (expected)"
		} else if !res.Passed {
			outcome = "FAIL"
		}
		t.Logf("%-45s %s", s, outcome)
		results = append(results, res)
	}
	t.Logf("%d scenarios in %v", len(scenarios), time.Since(start).Round(time.Millisecond))

	r := Compare(b, results)
	for _, s := range r.NewlyPassing {
		t.Logf("NEWLY PASSING: %s is an expected failure in baseline.json but passed; move it to pass", s)
	}
	for _, s := range r.Unlisted {
		t.Logf("UNLISTED: %s passed but baseline.json does not name it; add it to pass", s)
	}
	for _, s := range r.Missing {
		t.Errorf("MISSING: %s is in baseline.json but the suite did not run it; update the baseline", s)
	}
	for _, res := range r.Regressions {
		t.Errorf("REGRESSION: %s failed and is not an expected failure:\n%s", res.Scenario, res.Detail)
	}
}

// missing fails the test under CI and skips it elsewhere, with the command
// that installs what is missing.
func missing(t *testing.T, why string) {
	t.Helper()
	msg := why + "; install the conformance suite with: npm ci --prefix " + npmDir + " (make test does it)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func installedVersion(t *testing.T, nodeModules string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nodeModules, "@modelcontextprotocol", "conformance", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	return pkg.Version
}

// buildClient builds ./client into a temporary directory. The suite splits
// the client command on spaces and runs it through a shell, so the path must
// be plain.
func buildClient(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "client")
	if !regexp.MustCompile(`^[A-Za-z0-9_./-]+$`).MatchString(bin) {
		t.Fatalf("client path %q is not safe to hand to the suite's shell", bin)
	}
	out, err := exec.Command("go", "build", "-o", bin, "./client").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./client: %v\n%s", err, out)
	}
	return bin
}

// listScenarios asks the suite for its client scenarios.
func listScenarios(t *testing.T, node, cli string) []string {
	t.Helper()
	out, err := exec.Command(node, cli, "list", "--client").Output()
	if err != nil {
		t.Fatalf("conformance list --client: %v", err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  - (\S+)`).FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("conformance list --client listed no scenarios:\n%s", out)
	}
	return names
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, ...
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// runScenario runs one scenario. It passes when the suite exits 0 (no failed
// or warned check, no client timeout, and the client exited 0 unless the
// scenario expects it to fail) and at least one check succeeded: a scenario
// whose server never saw what it checks reports no check at all, and the
// suite counts that as a pass.
func runScenario(t *testing.T, node, cli, bin, scenario string) Result {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), scenarioTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "client",
		"--command", bin, "--scenario", scenario, "--timeout", "30000", "-o", out)
	// The suite starts the client through a shell and, on its timeout,
	// kills only the shell: give them all a process group to end together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	runErr := cmd.Run()
	if cmd.Process != nil {
		// Nothing of this scenario outlives it. ESRCH: nothing was left.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}

	res := Result{Scenario: scenario}
	checks, stderr, err := readResults(out)
	if err != nil {
		res.Detail = fmt.Sprintf("no results (%v); suite exit: %v\n%s", err, runErr, tail(log.String(), 40))
		return res
	}
	var failed []string
	succeeded := 0
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			succeeded++
		case "FAILURE", "WARNING":
			msg := c.ErrorMessage
			if msg == "" {
				msg = c.Description
			}
			failed = append(failed, fmt.Sprintf("  %s %s: %s", c.Status, c.ID, msg))
		}
	}
	res.Passed = runErr == nil && succeeded > 0
	if !res.Passed {
		if succeeded == 0 && len(failed) == 0 {
			failed = append(failed, "  no check succeeded or failed: the scenario's server saw nothing to check")
		}
		res.Detail = fmt.Sprintf("%s\n  suite exit: %v\n  client stderr:\n%s",
			strings.Join(failed, "\n"), runErr, indent(tail(stderr, 15)))
	}
	return res
}

// readResults reads what the suite wrote for one scenario under out:
// <scenario>-<time>/checks.json and stderr.txt.
func readResults(out string) ([]check, string, error) {
	var found string
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.json" {
			found = p
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if found == "" {
		return nil, "", errors.New("no checks.json")
	}
	data, err := os.ReadFile(found)
	if err != nil {
		return nil, "", err
	}
	var checks []check
	if err := json.Unmarshal(data, &checks); err != nil {
		return nil, "", fmt.Errorf("%s: %w", found, err)
	}
	stderr, _ := os.ReadFile(filepath.Join(filepath.Dir(found), "stderr.txt"))
	return checks, string(stderr), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
