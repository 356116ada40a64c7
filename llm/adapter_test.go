package llm_test

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/llm"
)

// TestAdapterOptions: the adapters' options compose in either order, and a
// RunOptions that names its own meta-tools is not overridden by an earlier
// WithMetaTools (the adapters once dropped RunOptions.Meta silently).
func TestAdapterOptions(t *testing.T) {
	meta, other := &llm.MetaTools{}, &llm.MetaTools{}
	clock := func() time.Time { return time.Unix(0, 0) }
	apply := func(opts ...llm.AdapterOption) llm.RunOptions {
		var o llm.RunOptions
		for _, opt := range opts {
			opt(&o)
		}
		return o
	}
	for name, tc := range map[string]struct {
		opts     []llm.AdapterOption
		meta     *llm.MetaTools
		parallel int
	}{
		"meta then run":     {[]llm.AdapterOption{llm.WithMetaTools(meta), llm.WithRunOptions(llm.RunOptions{Parallel: 2, Now: clock})}, meta, 2},
		"run then meta":     {[]llm.AdapterOption{llm.WithRunOptions(llm.RunOptions{Parallel: 2, Now: clock}), llm.WithMetaTools(meta)}, meta, 2},
		"run names its own": {[]llm.AdapterOption{llm.WithMetaTools(meta), llm.WithRunOptions(llm.RunOptions{Parallel: 3, Meta: other, Now: clock})}, other, 3},
		"meta last wins":    {[]llm.AdapterOption{llm.WithRunOptions(llm.RunOptions{Meta: other, Now: clock}), llm.WithMetaTools(meta)}, meta, 0},
	} {
		t.Run(name, func(t *testing.T) {
			o := apply(tc.opts...)
			if o.Meta != tc.meta || o.Parallel != tc.parallel || o.Now == nil {
				t.Errorf("got Meta %p Parallel %d Now set %v, want Meta %p Parallel %d and Now set", o.Meta, o.Parallel, o.Now != nil, tc.meta, tc.parallel)
			}
		})
	}
}
