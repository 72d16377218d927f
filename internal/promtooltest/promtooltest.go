// Package promtooltest runs promtool 3.16 (bin/promtool, built by scripts/install-tools.sh) for
// the tests of every package, so that each of them spends promtool's time only once:
//
//   - `promtool test rules` is run in shards, one process per CPU, each with a share of the test
//     groups (promtool itself runs the groups of a file one after another, on one core);
//   - a `test rules` or `check rules` run that passed is remembered by the digest of its inputs
//     — the promtool version, the arguments and every file of the directory it runs in — so the
//     same generated file set is checked once per machine, whichever package or script generated
//     it. scripts/promtool.sh computes the same digest, so `make` targets share the results.
//     Failures are never remembered: a failing run is always run again and reported.
//
// Set STORMWATCH_PROMTOOL_CACHE=off to run every invocation, STORMWATCH_PROMTOOL to use another
// promtool binary.
package promtooltest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// Timeout bounds one promtool process: a guard against a hang, far above a minute of CPU,
// since a machine shared by many jobs can stretch that minute tenfold in wall time.
const Timeout = 15 * time.Minute

// Path returns the absolute path of bin/promtool in the module root above the working
// directory, and skips t when it is absent.
func Path(t testing.TB) string {
	t.Helper()
	p, err := locate()
	if err != nil {
		t.Skipf("%v: run scripts/install-tools.sh promtool (make test and CI always do)", err)
	}
	return p
}

func locate() (string, error) {
	if p := os.Getenv("STORMWATCH_PROMTOOL"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "scripts", "install-tools.sh")); err == nil {
				p := filepath.Join(dir, "bin", "promtool")
				if _, err := os.Stat(p); err != nil {
					return "", fmt.Errorf("bin/promtool is absent (%w)", err)
				}
				return p, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no stormwatch module root above the working directory")
		}
		dir = parent
	}
}

// Run runs promtool with args in dir and returns its combined output and whether it succeeded.
// `test rules` runs are sharded across CPUs; passing `test rules` and `check rules` runs are
// remembered (see the package documentation).
func Run(t testing.TB, dir string, args ...string) (string, bool) {
	t.Helper()
	bin := Path(t)
	key, cacheable := "", cacheableArgs(args)
	if cacheable {
		var err error
		key, err = Digest(bin, dir, args)
		if err != nil {
			t.Fatalf("promtool inputs: %v", err)
		}
		if out, ok := recalled(key); ok {
			return out, true
		}
	}
	var out string
	var ok bool
	if len(args) >= 2 && args[0] == "test" && args[1] == "rules" {
		out, ok = testRules(t, bin, dir, args[2:])
	} else {
		out, ok = run(t, bin, dir, args)
	}
	if ok && cacheable {
		remember(key, out)
	}
	return out, ok
}

func cacheableArgs(args []string) bool {
	if os.Getenv("STORMWATCH_PROMTOOL_CACHE") == "off" || len(args) < 2 || args[1] != "rules" {
		return false
	}
	return args[0] == "test" || args[0] == "check"
}

func run(t testing.TB, bin, dir string, args []string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("promtool %s timed out after %s", strings.Join(args, " "), Timeout)
	}
	return string(out), err == nil
}

// testRules runs `promtool test rules [flags] FILE…`, each file split into shards of its test
// groups that run side by side.
func testRules(t testing.TB, bin, dir string, args []string) (string, bool) {
	t.Helper()
	flags, files := splitFlags(args)
	shards := runtime.NumCPU()
	type result struct {
		out string
		ok  bool
	}
	var jobs [][]string
	for _, f := range files {
		parts, err := shard(dir, f, shards, t.TempDir())
		if err != nil {
			t.Fatalf("sharding %s: %v", f, err)
		}
		jobs = append(jobs, parts...)
	}
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	for i, files := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, ok := runQuiet(bin, dir, append(append([]string{"test", "rules"}, flags...), files...))
			results[i] = result{out, ok}
		}()
	}
	wg.Wait()
	var all strings.Builder
	ok := true
	for _, r := range results {
		all.WriteString(r.out)
		ok = ok && r.ok
	}
	return all.String(), ok
}

// runQuiet is run without a testing.TB, for goroutines: a timeout is reported in the output.
func runQuiet(bin, dir string, args []string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out) + fmt.Sprintf("\npromtool %s timed out after %s\n", strings.Join(args, " "), Timeout), false
	}
	return string(out), err == nil
}

// splitFlags separates promtool's flags (and their values) from the file arguments.
func splitFlags(args []string) (flags, files []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--run" && i+1 < len(args):
			flags = append(flags, a, args[i+1])
			i++
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
		default:
			files = append(files, a)
		}
	}
	return flags, files
}

// shard splits the test file (relative to dir) into at most n files of about as much work
// each (balance), written to tmp with rule_files made absolute. The YAML is cut as a node tree, so
// every value stays as written. A file of fewer than two groups is returned as it is.
func shard(dir, file string, n int, tmp string) ([][]string, error) {
	path := file
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, file)
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return [][]string{{file}}, nil // promtool reports what is wrong with it
	}
	root := doc.Content[0]
	tests := field(root, "tests")
	if n < 2 || tests == nil || tests.Kind != yaml.SequenceNode || len(tests.Content) < 2 {
		return [][]string{{file}}, nil
	}
	if rf := field(root, "rule_files"); rf != nil {
		for _, r := range rf.Content {
			if r.Kind == yaml.ScalarNode && !filepath.IsAbs(r.Value) {
				r.Value = filepath.Join(filepath.Dir(path), r.Value)
			}
		}
	}
	all := tests.Content
	n = min(n, len(all))
	var out [][]string
	for i, part := range balance(all, n) {
		tests.Content = part
		b, err := yaml.Marshal(&doc)
		if err != nil {
			return nil, err
		}
		name := filepath.Join(tmp, fmt.Sprintf("shard-%d-%s", i, filepath.Base(file)))
		if err := os.WriteFile(name, b, 0o644); err != nil {
			return nil, err
		}
		out = append(out, []string{name})
	}
	return out, nil
}

// balance splits the test groups into n shards of about as much work each: the most
// expensive first, each to the shard with the least work so far (then the fewest groups). A
// group's work is its last eval_time (promtool evaluates every rule from 0 to there); a shard
// keeps its groups in file order.
func balance(groups []*yaml.Node, n int) [][]*yaml.Node {
	cost := make([]time.Duration, len(groups))
	order := make([]int, len(groups))
	for i, g := range groups {
		cost[i], order[i] = lastEvalTime(g), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cost[b], cost[a]) })
	load, picked := make([]time.Duration, n), make([][]int, n)
	for _, i := range order {
		s := 0
		for j := 1; j < n; j++ {
			if load[j] < load[s] || load[j] == load[s] && len(picked[j]) < len(picked[s]) {
				s = j
			}
		}
		load[s] += cost[i]
		picked[s] = append(picked[s], i)
	}
	out := make([][]*yaml.Node, n)
	for s, idx := range picked {
		slices.Sort(idx)
		for _, i := range idx {
			out[s] = append(out[s], groups[i])
		}
	}
	return out
}

// lastEvalTime is the latest eval_time of a test group's alert and expression tests (0 where
// none parses).
func lastEvalTime(g *yaml.Node) time.Duration {
	var last time.Duration
	if g.Kind != yaml.MappingNode {
		return 0
	}
	for _, key := range []string{"alert_rule_test", "promql_expr_test"} {
		seq := field(g, key)
		if seq == nil || seq.Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range seq.Content {
			if item.Kind != yaml.MappingNode {
				continue
			}
			if at := field(item, "eval_time"); at != nil {
				if d, err := model.ParseDuration(at.Value); err == nil {
					last = max(last, time.Duration(d))
				}
			}
		}
	}
	return last
}

// field returns the value node of key in a mapping node, or nil.
func field(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Digest is the key of a promtool run: SHA-256 over the promtool version line, the arguments
// and `sha256sum`'s listing of every regular file under dir, sorted by path — exactly what
// scripts/promtool.sh hashes.
func Digest(bin, dir string, args []string) (string, error) {
	version, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("promtool --version: %w", err)
	}
	first, _, _ := bytes.Cut(version, []byte("\n"))
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, "./"+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(files) // LC_ALL=C sort
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", first, strings.Join(args, " "))
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s  %s\n", hex.EncodeToString(sum[:]), f)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CacheDir is where passing runs are remembered (shared with scripts/promtool.sh).
func CacheDir() string {
	if d := os.Getenv("STORMWATCH_PROMTOOL_CACHE_DIR"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "stormwatch-tools", "promtool-passed")
}

func recalled(key string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(CacheDir(), key))
	return string(b), err == nil
}

func remember(key, out string) {
	dir := CacheDir()
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(out)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(dir, key)) != nil {
		os.Remove(tmp.Name())
	}
}
