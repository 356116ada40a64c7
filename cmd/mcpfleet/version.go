package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
)

// buildInfo is what the binary knows of how it was built: the module's
// version (a tag when built from a published version, "(devel)" from a
// clone), and, from a clone, the VCS revision, its time and whether the
// tree had changes.
type buildInfo struct {
	Module   string    `json:"module"`
	Version  string    `json:"version"`
	Revision string    `json:"revision,omitempty"`
	Time     time.Time `json:"time,omitzero"`
	Modified bool      `json:"modified,omitempty"`
	Go       string    `json:"go"`
	Platform string    `json:"platform"`
}

// readBuildInfo reads the build information Go records in the binary.
// A build from a clone records the revision, and since Go 1.24 a
// pseudo-version naming it as the module's version, unless -buildvcs=false
// (in GOFLAGS too) says not to; a build in a `git worktree` records none.
func readBuildInfo() buildInfo { return buildInfoOf(debug.ReadBuildInfo()) }

// buildInfoOf is what bi says, if ok.
func buildInfoOf(bi *debug.BuildInfo, ok bool) buildInfo {
	b := buildInfo{Module: "github.com/mcpfleet/mcpfleet", Version: "(devel)", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok {
		return b
	}
	if bi.Main.Path != "" {
		b.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// short is the version in one word, as the gateway tells its clients
// (serverInfo.version): the module's version when the build has one (a
// release, or a clone's pseudo-version, which names the commit); else
// "devel", with the revision's first 12 characters and "-dirty" for a
// tree with changes when the build recorded them.
func (b buildInfo) short() string {
	if b.Version != "(devel)" && b.Version != "" {
		return b.Version
	}
	s := "devel"
	if b.Revision != "" {
		s += "-" + b.Revision[:min(12, len(b.Revision))]
		if b.Modified {
			s += "-dirty"
		}
	}
	return s
}

// version is mcpfleet's version in one word (buildInfo.short).
func version() string { return readBuildInfo().short() }

func cmdVersion(_ context.Context, args []string, e *env) error {
	var c commonFlags
	fs := newFlags("version", e, &c, flagJSON)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("version takes no arguments (got %q)", pos)
	}
	b := readBuildInfo()
	if c.json {
		return printJSON(e.stdout, map[string]any{"version": b.short(), "build": b})
	}
	fmt.Fprintf(e.stdout, "mcpfleet %s\n", b.short())
	fmt.Fprintf(e.stdout, "module   %s %s\n", b.Module, b.Version)
	if b.Revision != "" {
		line := "revision " + b.Revision
		if !b.Time.IsZero() {
			line += " (" + b.Time.UTC().Format(time.RFC3339) + ")"
		}
		if b.Modified {
			line += ", with changes not committed"
		}
		fmt.Fprintln(e.stdout, line)
	}
	fmt.Fprintf(e.stdout, "go       %s %s\n", b.Go, b.Platform)
	return nil
}
