package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestVersion: a binary built from the clone says its module version and
// the commit it was built from (the build records it; git says which it
// is), as `version` and `--version`; its serve tells MCP clients the same
// version as serverInfo.version. It runs in parallel (it sets no variable
// of this process): the build takes seconds of its own.
func TestVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpfleet")
	}
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build mcpfleet with")
	}
	bin := filepath.Join(t.TempDir(), "mcpfleet")
	build := exec.CommandContext(testCtx(t), goBin, "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(testCtx(t), bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version string
		Build   buildInfo
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Build.Module != "github.com/mcpfleet/mcpfleet" || v.Version != v.Build.short() {
		t.Fatalf("version --json: %s %v", out, err)
	}
	head, err := exec.CommandContext(testCtx(t), "git", "rev-parse", "HEAD").Output()
	switch {
	case err != nil:
		t.Logf("no git here (%v): the revision is not checked", err)
	case v.Build.Revision == "":
		// A git worktree: the go command records nothing, even with
		// -buildvcs=true (buildInfoOf's test covers what a recorded
		// revision becomes).
		t.Logf("the build recorded no revision (a git worktree?): version %q", v.Version)
	default:
		if got, want := v.Build.Revision, strings.TrimSpace(string(head)); got != want {
			t.Fatalf("the build says revision %q, git says %q", got, want)
		}
		if !strings.Contains(v.Version, v.Build.Revision[:12]) {
			t.Fatalf("version %q does not name the revision", v.Version)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.CommandContext(testCtx(t), bin, args...).Output()
		if err != nil || !strings.HasPrefix(string(out), "mcpfleet "+v.Version+"\n") {
			t.Fatalf("%v: %q %v", args, out, err)
		}
	}

	c := newCLI(t)
	c.writeConfig(map[string]any{})
	mc, err := mcpclient.NewStdioMCPClient(bin, []string{envStateDir + "=" + c.stateDir}, "serve", "--stdio", "--config", c.config)
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	res, err := mc.Initialize(testCtx(t), init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerInfo.Name != "mcpfleet" || res.ServerInfo.Version != v.Version {
		t.Fatalf("serverInfo %+v, want mcpfleet %s", res.ServerInfo, v.Version)
	}
	_ = os.Remove(bin)
}

// TestBuildInfoOf: what the build recorded becomes the version: a release
// tag as it is; a clone's build "devel-" and its revision, "-dirty" with
// changes not committed.
func TestBuildInfoOf(t *testing.T) {
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Path: "github.com/mcpfleet/mcpfleet", Version: "v0.4.0"}}, "v0.4.0"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "9bc7b64e1a2b3c4d5e6f"}, {Key: "vcs.time", Value: "2026-03-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"devel-9bc7b64e1a2b-dirty"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "9bc7b64e1a2b3c4d"}}},
			"devel-9bc7b64e1a2b"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		// Go 1.24 on: a clone's build has a pseudo-version naming the commit.
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261127215802-d80f97a1d918+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "d80f97a1d9187521af94224f41f0978cd350a86c"}, {Key: "vcs.modified", Value: "true"}}},
			"v0.0.0-20261127215802-d80f97a1d918+dirty"},
	} {
		if got := buildInfoOf(tc.bi, true).short(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.bi.Settings, got, tc.want)
		}
	}
	if b := buildInfoOf(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.time", Value: "2026-03-01T10:00:00Z"}}}, true); b.Time.IsZero() {
		t.Error("the revision's time was not read")
	}
}
