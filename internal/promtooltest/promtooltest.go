// Package promtooltest runs promtool 3.16 (bin/promtool, built by scripts/install-tools.sh) for
// the tests of every package, so that each of them spends promtool's time only once:
//
//   - `promtool test rules` is run in shards, one process per CPU, each with a share of the test
//     groups (promtool itself runs the groups of a file one after another, on one core);
//   - a `test rules` or `check rules` run that passed is remembered by the digest of its inputs
//     — the promtool version, the arguments and every file of the directory it runs in — so the
//     same generated file set is checked once per machine, whichever package or script generated
//     it. scripts/promtool.sh computes the same digest, so `make` targets share the results.
//     It is also remembered by the digest of its content (ContentDigest: the files promtool
//     reads, whatever their names), so the rules package's rules.yaml and the CLI's
//     stormwatch-rules.yaml of the same configuration are one run. Failures are never
//     remembered: a failing run is always run again and reported;
//   - two test binaries that need the same content at once (`go test ./...` runs packages side
//     by side) run it once: the second waits for the first's result.
//
// Set STORMWATCH_PROMTOOL_CACHE=off to run every invocation, STORMWATCH_PROMTOOL to use another
// promtool binary, STORMWATCH_PROMTOOL_LOG=file to log every invocation (wall and CPU time,
// package, recalled or run).
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
	"syscall"
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
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "promtool")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("bin/promtool is absent (%w)", err)
	}
	return p, nil
}

// moduleRoot is the stormwatch repository root above the working directory: the first
// directory with a go.mod and scripts/install-tools.sh.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "scripts", "install-tools.sh")); err == nil {
				return dir, nil
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
// remembered (see the package documentation), under two keys: the directory's (Digest, shared
// with scripts/promtool.sh) and the content's (ContentDigest: the same rules and tests under
// other file names, in another directory, are the same run). While one process runs promtool
// on some content, another that needs the same waits for it and recalls its result instead of
// running it again (a lock file beside the results; a dead holder's lock is taken over).
func Run(t testing.TB, dir string, args ...string) (string, bool) {
	t.Helper()
	bin := Path(t)
	start := time.Now()
	var keys []string
	if cacheableArgs(args) {
		key, err := Digest(bin, dir, args)
		if err != nil {
			t.Fatalf("promtool inputs: %v", err)
		}
		keys = append(keys, key)
		if ck, ok := ContentDigest(bin, dir, args); ok {
			keys = append(keys, ck)
		}
		if out, ok := recalledAny(keys); ok {
			logRun(dir, args, "recalled", start, 0)
			return out, true
		}
		release, waited := claim(keys[len(keys)-1])
		defer release()
		if out, ok := recalledAny(keys); ok {
			logRun(dir, args, "recalled after waiting", start, 0)
			return out, true
		} else if waited {
			logRun(dir, args, "waited, then ran", start, 0)
		}
	}
	var out string
	var ok bool
	var cpu time.Duration
	if len(args) >= 2 && args[0] == "test" && args[1] == "rules" {
		out, ok, cpu = testRules(t, bin, dir, args[2:])
	} else {
		out, ok, cpu = run(t, bin, dir, args)
	}
	if ok {
		for _, key := range keys {
			remember(key, out)
		}
	}
	logRun(dir, args, map[bool]string{true: "ran: passed", false: "ran: failed"}[ok], start, cpu)
	return out, ok
}

// logRun appends a line to $STORMWATCH_PROMTOOL_LOG, when set: the wall and CPU seconds of a
// promtool invocation, the test binary's directory, what happened, the arguments. It is how
// `make test`'s promtool time is attributed to packages and file sets.
func logRun(dir string, args []string, what string, start time.Time, cpu time.Duration) {
	path := os.Getenv("STORMWATCH_PROMTOOL_LOG")
	if path == "" {
		return
	}
	pkg, _ := os.Getwd()
	if root, err := moduleRoot(); err == nil {
		if rel, err := filepath.Rel(root, pkg); err == nil {
			pkg = "./" + filepath.ToSlash(rel)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\twall %.1fs\tcpu %.1fs\t%s\t%s\t%s\t%s\n", time.Now().UTC().Format(time.TimeOnly),
		time.Since(start).Seconds(), cpu.Seconds(), pkg, what, strings.Join(args, " "), dir)
}

func cacheableArgs(args []string) bool {
	if os.Getenv("STORMWATCH_PROMTOOL_CACHE") == "off" || len(args) < 2 || args[1] != "rules" {
		return false
	}
	return args[0] == "test" || args[0] == "check"
}

func run(t testing.TB, bin, dir string, args []string) (string, bool, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("promtool %s timed out after %s", strings.Join(args, " "), Timeout)
	}
	return string(out), err == nil, cpuOf(cmd)
}

// cpuOf is the user and system time of a finished command.
func cpuOf(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// testRules runs `promtool test rules [flags] FILE…`, each file split into shards of its test
// groups that run side by side.
func testRules(t testing.TB, bin, dir string, args []string) (string, bool, time.Duration) {
	t.Helper()
	flags, files := splitFlags(args)
	shards := runtime.NumCPU()
	type result struct {
		out string
		ok  bool
		cpu time.Duration
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
			out, ok, cpu := runQuiet(bin, dir, append(append([]string{"test", "rules"}, flags...), files...))
			results[i] = result{out, ok, cpu}
		}()
	}
	wg.Wait()
	var all strings.Builder
	ok := true
	var cpu time.Duration
	for _, r := range results {
		all.WriteString(r.out)
		ok = ok && r.ok
		cpu += r.cpu
	}
	return all.String(), ok, cpu
}

// runQuiet is run without a testing.TB, for goroutines: a timeout is reported in the output.
func runQuiet(bin, dir string, args []string) (string, bool, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out) + fmt.Sprintf("\npromtool %s timed out after %s\n", strings.Join(args, " "), Timeout), false, cpuOf(cmd)
	}
	return string(out), err == nil, cpuOf(cmd)
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
	first, err := versionLine(bin)
	if err != nil {
		return "", err
	}
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

// versions holds the first line of `promtool --version` by binary path.
var versions sync.Map

func versionLine(bin string) (string, error) {
	if v, ok := versions.Load(bin); ok {
		return v.(string), nil
	}
	version, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("promtool --version: %w", err)
	}
	first, _, _ := bytes.Cut(version, []byte("\n"))
	versions.Store(bin, string(first))
	return string(first), nil
}

// ContentDigest is the key of a promtool run by what promtool reads, whatever the files are
// named and wherever they are: SHA-256 over "content", the promtool version line, the
// subcommand and flags, and the SHA-256 of each file argument (relative to dir) — for `test
// rules`, of the test file without its rule_files block, followed by the SHA-256 of each file
// that block names, in order (relative to the test file, as promtool resolves them). ok is
// false when a file cannot be read or the rule_files block is not a plain block list of plain
// names (a glob, quotes, a flow list): such a run is keyed by Digest only. scripts/promtool.sh
// computes the same key (the block is read as text, by the same rules, in both).
func ContentDigest(bin, dir string, args []string) (key string, ok bool) {
	if len(args) < 2 {
		return "", false
	}
	first, err := versionLine(bin)
	if err != nil {
		return "", false
	}
	flags, files := splitFlags(args[2:])
	if len(files) == 0 {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "content\n%s\n%s %s %s\n", first, args[0], args[1], strings.Join(flags, " "))
	for _, f := range files {
		path := f
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, f)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		if args[0] != "test" {
			fmt.Fprintf(h, "%s\n", sum(data))
			continue
		}
		body, ruleFiles, ok := splitRuleFiles(data)
		if !ok {
			return "", false
		}
		fmt.Fprintf(h, "%s\n", sum(body))
		for _, r := range ruleFiles {
			if !filepath.IsAbs(r) {
				r = filepath.Join(filepath.Dir(path), r)
			}
			b, err := os.ReadFile(r)
			if err != nil {
				return "", false
			}
			fmt.Fprintf(h, "%s\n", sum(b))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// splitRuleFiles reads a promtool test file as lines (each ended by a newline in body): the
// block that a line "rule_files:" opens — the lines after it that start with a space, a tab or
// a dash — is taken out of body, and its entries ("  - name") are returned. ok is false for a
// second rule_files line, a rule_files line with anything after the colon, or a block line
// that is not an entry of a plain name (no quote, glob, brace, comma, comment or blank).
func splitRuleFiles(data []byte) (body []byte, ruleFiles []string, ok bool) {
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	in, seen := false, false
	for _, l := range lines {
		if strings.HasPrefix(l, "rule_files:") {
			if l != "rule_files:" || seen {
				return nil, nil, false
			}
			in, seen = true, true
			continue
		}
		if in && l != "" && strings.ContainsRune(" \t-", rune(l[0])) {
			name, found := strings.CutPrefix(strings.TrimLeft(l, " \t"), "- ")
			if !found || name == "" || strings.ContainsAny(name, "'\"*?[{#, \t") {
				return nil, nil, false
			}
			ruleFiles = append(ruleFiles, name)
			continue
		}
		in = false
		b.WriteString(l + "\n")
	}
	return []byte(b.String()), ruleFiles, true
}

// claim makes this process the one that runs promtool on key: it creates key.lock beside the
// results (exclusively). While another live process holds it, claim waits — that process's
// result, when it passes, is recalled after — and reports that it waited. A lock whose process
// is gone (a test binary killed mid-run) is taken over; without a cache directory there is
// nothing to share and nothing to wait for.
func claim(key string) (release func(), waited bool) {
	dir := CacheDir()
	if os.MkdirAll(dir, 0o755) != nil {
		return func() {}, false
	}
	lock := filepath.Join(dir, key+".lock")
	deadline := time.Now().Add(Timeout)
	for {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			return func() { os.Remove(lock) }, waited
		}
		if !errors.Is(err, fs.ErrExist) || time.Now().After(deadline) {
			return func() {}, waited
		}
		if !holderAlive(lock) {
			if _, err := os.Stat(lock); err == nil {
				os.Remove(lock)
			}
			continue
		}
		if !waited && onWait != nil {
			onWait()
		}
		waited = true
		time.Sleep(200 * time.Millisecond)
	}
}

// onWait, when set (by the tests), is called when claim starts waiting for another holder.
var onWait func()

// holderAlive reports whether the process whose id is in the lock file still runs (false also
// when the lock is gone). A lock left empty for 10 seconds is a holder that died writing it.
func holderAlive(lock string) bool {
	fi, err := os.Stat(lock)
	if err != nil {
		return false
	}
	b, err := os.ReadFile(lock)
	if err != nil {
		return false
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		return time.Since(fi.ModTime()) < 10*time.Second
	}
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

// recalledAny recalls the result of the first key that has one, and remembers it under the
// others (a content match found under one directory's key serves the next directory's).
func recalledAny(keys []string) (string, bool) {
	for i, key := range keys {
		if out, ok := recalled(key); ok {
			for j, other := range keys {
				if j != i {
					if _, ok := recalled(other); !ok {
						remember(other, out)
					}
				}
			}
			return out, true
		}
	}
	return "", false
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
