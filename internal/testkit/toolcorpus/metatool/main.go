// Command metatool writes the subset of the MetaTool benchmark
// (github.com/HowieHwong/MetaTool, MIT license, by Yue Huang et al.) that
// testdata/toolcorpus/metatool keeps: the descriptions of its 199 tools
// (OpenAI plugins), five single-tool queries per tool, and 100 of its
// queries that need no tool, for measuring abstention on a corpus the
// project did not write. The tests read the subset; nothing fetches it at
// test time. To write it again, from the repository root:
//
//	git clone https://github.com/HowieHwong/MetaTool /tmp/MetaTool
//	go run ./internal/testkit/toolcorpus/metatool -src /tmp/MetaTool
//
// It reads dataset/plugin_des.json (tool -> description),
// dataset/data/all_clean_data.csv (query, tool) and
// dataset/tmp_dataset/Task1.json (queries labelled positive or negative
// for "needs a tool"). The subset is chosen by a hash of each query's
// text, so the same files give the same subset.
package main

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const (
	perTool  = 5
	noAnswer = 100
)

type query struct {
	Text string `json:"q"`
	Want string `json:"want"`
}

type tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func main() {
	src := flag.String("src", "", "a checkout of github.com/HowieHwong/MetaTool")
	out := flag.String("out", "testdata/toolcorpus/metatool", "where to write the subset")
	flag.Parse()
	if *src == "" {
		fmt.Fprintln(os.Stderr, "metatool: -src is required (a checkout of github.com/HowieHwong/MetaTool)")
		os.Exit(2)
	}
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "metatool:", err)
		os.Exit(1)
	}
}

func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func byHash(texts []string) []string {
	slices.SortFunc(texts, func(a, b string) int {
		ha, hb := hash(a), hash(b)
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return texts
}

func run(src, out string) error {
	var descs map[string]string
	if err := readJSON(filepath.Join(src, "dataset", "plugin_des.json"), &descs); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(src, "dataset", "data", "all_clean_data.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return fmt.Errorf("all_clean_data.csv: %w", err)
	}
	byTool := map[string][]string{}
	for _, r := range rows[1:] {
		if len(r) != 2 {
			return fmt.Errorf("all_clean_data.csv: a row of %d fields", len(r))
		}
		if _, ok := descs[r[1]]; !ok {
			return fmt.Errorf("all_clean_data.csv: tool %q has no description", r[1])
		}
		byTool[r[1]] = append(byTool[r[1]], r[0])
	}
	var tools []tool
	var queries []query
	for _, name := range slices.Sorted(maps.Keys(descs)) {
		tools = append(tools, tool{Name: name, Description: descs[name]})
		texts := byHash(slices.Compact(slices.Sorted(slices.Values(byTool[name]))))
		for _, q := range texts[:min(perTool, len(texts))] {
			queries = append(queries, query{Text: q, Want: name})
		}
	}
	var task1 []struct {
		Label string `json:"label"`
		Query string `json:"query"`
	}
	if err := readJSON(filepath.Join(src, "dataset", "tmp_dataset", "Task1.json"), &task1); err != nil {
		return err
	}
	var negatives []string
	for _, q := range task1 {
		if q.Label == "negative" && len(q.Query) < 300 {
			negatives = append(negatives, q.Query)
		}
	}
	negatives = byHash(slices.Compact(slices.Sorted(slices.Values(negatives))))
	negatives = negatives[:min(noAnswer, len(negatives))]

	for name, v := range map[string]any{"tools.json": tools, "queries.json": queries, "noanswer.json": negatives} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%d tools, %d queries, %d queries that need no tool\n", len(tools), len(queries), len(negatives))
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}
