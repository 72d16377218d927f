package promtooltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// fakePromtool is a promtool stand-in: it logs every invocation to $FAKE_LOG, passes `check
// rules`, and fails `test rules` on a file that contains FAIL_ME, printing the group names.
const fakePromtool = `#!/bin/sh
if [ "$1" = --version ]; then echo "promtool, version 3.16.0 (fake)"; exit 0; fi
echo "$*" >> "$FAKE_LOG"
[ -z "$FAKE_SLEEP" ] || sleep "$FAKE_SLEEP"
if [ "$1" = test ]; then
  shift 2
  status=0
  for f in "$@"; do
    case "$f" in -*) continue;; esac
    grep -o 'name: [a-z0-9-]*' "$f"
    if grep -q FAIL_ME "$f"; then echo FAILED; status=1; fi
  done
  [ $status = 0 ] && echo SUCCESS
  exit $status
fi
exit 0
`

// setup installs the fake promtool and an empty result cache; it returns the invocation log.
func setup(t *testing.T) (log string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "promtool")
	require.NoError(t, os.WriteFile(bin, []byte(fakePromtool), 0o755))
	log = filepath.Join(dir, "invocations")
	t.Setenv("STORMWATCH_PROMTOOL", bin)
	t.Setenv("STORMWATCH_PROMTOOL_CACHE_DIR", filepath.Join(dir, "cache"))
	t.Setenv("STORMWATCH_PROMTOOL_CACHE", "")
	t.Setenv("FAKE_LOG", log)
	t.Setenv("FAKE_SLEEP", "")
	t.Setenv("STORMWATCH_PROMTOOL_LOG", "")
	return log
}

func invocations(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

func testFile(groups ...string) string {
	var b strings.Builder
	b.WriteString("rule_files:\n  - rules.yaml\nevaluation_interval: 15s\ntests:\n")
	for _, g := range groups {
		b.WriteString("  - name: " + g + "\n    interval: 1m\n    input_series:\n      - series: 'up{job=\"a\"}'\n        values: '1+0x10'\n")
	}
	return b.String()
}

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	return dir
}

func TestShardKeepsEveryGroupOnceAndMakesRuleFilesAbsolute(t *testing.T) {
	groups := []string{"g1", "g2", "g3", "g4", "g5"}
	dir := writeDir(t, map[string]string{"t.yaml": testFile(groups...)})
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, dir) // promtool runs the shards elsewhere: a relative dir must not leak
	require.NoError(t, err)
	parts, err := shard(rel, "t.yaml", 3, t.TempDir())
	require.NoError(t, err)
	require.Len(t, parts, 3)
	var seen []string
	for _, p := range parts {
		require.Len(t, p, 1)
		raw, err := os.ReadFile(p[0])
		require.NoError(t, err)
		var doc struct {
			RuleFiles []string `yaml:"rule_files"`
			Interval  string   `yaml:"evaluation_interval"`
			Tests     []struct {
				Name        string `yaml:"name"`
				InputSeries []struct {
					Series, Values string
				} `yaml:"input_series"`
			} `yaml:"tests"`
		}
		require.NoError(t, yaml.Unmarshal(raw, &doc))
		assert.Equal(t, []string{filepath.Join(dir, "rules.yaml")}, doc.RuleFiles)
		assert.Equal(t, "15s", doc.Interval)
		require.NotEmpty(t, doc.Tests, "every shard has groups")
		for _, g := range doc.Tests {
			seen = append(seen, g.Name)
			assert.Equal(t, `up{job="a"}`, g.InputSeries[0].Series)
			assert.Equal(t, "1+0x10", g.InputSeries[0].Values)
		}
	}
	slices.Sort(seen)
	assert.Equal(t, groups, seen, "every group exactly once")

	one, err := shard(rel, "t.yaml", 1, t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"t.yaml"}}, one, "one shard runs the file itself")
}

func TestAFailingGroupInAnyShardFailsTheRun(t *testing.T) {
	log := setup(t)
	dir := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": testFile("g1", "g2", "fail-me-FAIL_ME", "g4")})
	out, ok := Run(t, dir, "test", "rules", "t.yaml")
	assert.False(t, ok)
	assert.Contains(t, out, "FAILED")
	for _, g := range []string{"g1", "g2", "g4"} {
		assert.Contains(t, out, "name: "+g, "the output of every shard is kept")
	}
	assert.GreaterOrEqual(t, invocations(t, log), 1)
}

func TestPassingRunsAreRememberedFailingOnesNever(t *testing.T) {
	log := setup(t)
	dir := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": testFile("g1", "g2")})
	out1, ok := Run(t, dir, "test", "rules", "t.yaml")
	require.True(t, ok, out1)
	n := invocations(t, log)
	require.GreaterOrEqual(t, n, 1)
	out2, ok := Run(t, dir, "test", "rules", "t.yaml")
	require.True(t, ok)
	assert.Equal(t, out1, out2)
	assert.Equal(t, n, invocations(t, log), "the same inputs passed before: promtool is not run again")

	_, ok = Run(t, dir, "check", "rules", "rules.yaml")
	require.True(t, ok)
	assert.Equal(t, n+1, invocations(t, log), "other arguments are other inputs")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("groups: [] # changed\n"), 0o644))
	_, ok = Run(t, dir, "test", "rules", "t.yaml")
	require.True(t, ok)
	assert.Greater(t, invocations(t, log), n+1, "a changed file in the directory is a new run")

	bad := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": testFile("FAIL_ME")})
	before := invocations(t, log)
	for range 2 {
		_, ok = Run(t, bad, "test", "rules", "t.yaml")
		assert.False(t, ok)
	}
	assert.Equal(t, before+2, invocations(t, log), "a failure is never remembered")

	t.Setenv("STORMWATCH_PROMTOOL_CACHE", "off")
	before = invocations(t, log)
	_, ok = Run(t, dir, "check", "rules", "rules.yaml")
	require.True(t, ok)
	assert.Equal(t, before+1, invocations(t, log), "STORMWATCH_PROMTOOL_CACHE=off runs every time")
}

// TestTheScriptAndTheTestsShareResults: scripts/promtool.sh and Run compute the same key, so a
// run either of them passed is not repeated by the other.
func TestTheScriptAndTheTestsShareResults(t *testing.T) {
	log := setup(t)
	script, err := filepath.Abs("../../scripts/promtool.sh")
	require.NoError(t, err)
	dir := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": testFile("g1")})
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "x.md"), []byte("x"), 0o644))

	sh := func(args ...string) (string, error) {
		out, err := exec.Command(script, append([]string{dir}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := sh("check", "rules", "--lint=all", "rules.yaml")
	require.NoError(t, err, out)
	assert.Equal(t, 1, invocations(t, log))
	_, ok := Run(t, dir, "check", "rules", "--lint=all", "rules.yaml")
	require.True(t, ok)
	assert.Equal(t, 1, invocations(t, log), "the script's pass is recalled by the Go tests")

	_, ok = Run(t, dir, "test", "rules", "t.yaml")
	require.True(t, ok)
	n := invocations(t, log)
	out, err = sh("test", "rules", "t.yaml")
	require.NoError(t, err, out)
	assert.Contains(t, out, "passed before on the same inputs")
	assert.Equal(t, n, invocations(t, log), "the Go tests' pass is recalled by the script")

	_, err = exec.Command(script, writeDir(t, map[string]string{"t.yaml": testFile("FAIL_ME")}), "test", "rules", "t.yaml").CombinedOutput()
	assert.Error(t, err, "the script reports promtool's failure")
}

// TestShardsBalanceTheWork: the groups are split by their evaluations (the last eval_time),
// not by their count: one long group gets a shard of its own.
func TestShardsBalanceTheWork(t *testing.T) {
	var b strings.Builder
	b.WriteString("rule_files:\n  - rules.yaml\ntests:\n")
	for i, last := range []string{"10m", "1m", "1h", "2m", "1m", "5m"} {
		fmt.Fprintf(&b, "  - name: g%d\n    alert_rule_test:\n      - eval_time: 30s\n        alertname: A\n      - eval_time: %s\n        alertname: A\n", i, last)
	}
	dir := writeDir(t, map[string]string{"t.yaml": b.String()})
	parts, err := shard(dir, "t.yaml", 2, t.TempDir())
	require.NoError(t, err)
	var names [][]string
	for _, p := range parts {
		raw, err := os.ReadFile(p[0])
		require.NoError(t, err)
		var doc struct {
			Tests []struct {
				Name string `yaml:"name"`
			} `yaml:"tests"`
		}
		require.NoError(t, yaml.Unmarshal(raw, &doc))
		var ns []string
		for _, g := range doc.Tests {
			ns = append(ns, g.Name)
		}
		names = append(names, ns)
	}
	assert.Equal(t, [][]string{{"g2"}, {"g0", "g1", "g3", "g4", "g5"}}, names, "the hour-long group alone, the rest in file order")
}

// TestTheSameContentUnderOtherNamesIsOneRun: rules and tests that differ only in their file
// names and their directory's other files (the rules package's rules.yaml, the CLI's
// stormwatch-rules.yaml beside runbooks) are one promtool run; changed content is a new one.
func TestTheSameContentUnderOtherNamesIsOneRun(t *testing.T) {
	log := setup(t)
	a := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": testFile("g1", "g2")})
	b := writeDir(t, map[string]string{"stormwatch-rules.yaml": "groups: []\n", "README.md": "x",
		"s.test.yaml": strings.Replace(testFile("g1", "g2"), "rules.yaml", "stormwatch-rules.yaml", 1)})
	out, ok := Run(t, a, "test", "rules", "t.yaml")
	require.True(t, ok, out)
	_, ok = Run(t, a, "check", "rules", "--lint=all", "rules.yaml")
	require.True(t, ok)
	n := invocations(t, log)

	again, ok := Run(t, b, "test", "rules", "s.test.yaml")
	require.True(t, ok)
	assert.Equal(t, out, again)
	_, ok = Run(t, b, "check", "rules", "--lint=all", "stormwatch-rules.yaml")
	require.True(t, ok)
	assert.Equal(t, n, invocations(t, log), "the same content under other names: recalled")

	script, err := filepath.Abs("../../scripts/promtool.sh")
	require.NoError(t, err)
	sh, err := exec.Command(script, b, "test", "rules", "s.test.yaml").CombinedOutput()
	require.NoError(t, err, string(sh))
	assert.Equal(t, n, invocations(t, log), "a recalled run is remembered under the directory's key too, for the script")

	_, ok = Run(t, b, "check", "rules", "stormwatch-rules.yaml")
	require.True(t, ok)
	assert.Equal(t, n+1, invocations(t, log), "other flags are another run")
	require.NoError(t, os.WriteFile(filepath.Join(b, "stormwatch-rules.yaml"), []byte("groups: [] # changed\n"), 0o644))
	_, ok = Run(t, b, "test", "rules", "s.test.yaml")
	require.True(t, ok)
	assert.Greater(t, invocations(t, log), n+1, "a changed rule file is a new run")

	glob := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": strings.Replace(testFile("g1"), "rules.yaml", "rul*.yaml", 1)})
	_, ok = ContentDigest(Path(t), glob, []string{"test", "rules", "t.yaml"})
	assert.False(t, ok, "a glob in rule_files: no content key")
}

// TestConcurrentRunsOfTheSameContentRunOnce: two test binaries (here two goroutines) that need
// the same content at once run promtool once; the second waits and recalls the result.
func TestConcurrentRunsOfTheSameContentRunOnce(t *testing.T) {
	log := setup(t)
	t.Setenv("FAKE_SLEEP", "0.3") // a run long enough for the other to find it under way, mostly
	record := filepath.Join(t.TempDir(), "runs.log")
	t.Setenv("STORMWATCH_PROMTOOL_LOG", record)
	dirs := []string{
		writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": testFile("g1")}),
		writeDir(t, map[string]string{"r.yaml": "groups: []\n", "x.yaml": strings.Replace(testFile("g1"), "rules.yaml", "r.yaml", 1)}),
	}
	files := []string{"t.yaml", "x.yaml"}
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, ok := Run(t, dirs[i], "test", "rules", files[i])
			assert.True(t, ok, out)
			outs[i] = out
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, invocations(t, log), "one promtool run for both")
	assert.Equal(t, outs[0], outs[1])
	entries, err := os.ReadDir(CacheDir())
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasSuffix(e.Name(), ".lock"), "lock %s left behind", e.Name())
	}
	b, err := os.ReadFile(record)
	require.NoError(t, err)
	assert.Contains(t, string(b), "ran: passed")
	assert.Contains(t, string(b), "recalled")
}

// TestAWaitingRunRecallsTheHoldersResult: while a live process holds the lock of some content,
// a run of that content waits, then recalls what the holder remembered: promtool is not run.
func TestAWaitingRunRecallsTheHoldersResult(t *testing.T) {
	log := setup(t)
	dir := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": testFile("g1")})
	key, ok := ContentDigest(Path(t), dir, []string{"test", "rules", "t.yaml"})
	require.True(t, ok)
	require.NoError(t, os.MkdirAll(CacheDir(), 0o755))
	lock := filepath.Join(CacheDir(), key+".lock")
	require.NoError(t, os.WriteFile(lock, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644))
	waiting := make(chan struct{})
	onWait = func() { close(waiting) }
	t.Cleanup(func() { onWait = nil })
	done := make(chan string)
	go func() {
		out, ok := Run(t, dir, "test", "rules", "t.yaml")
		assert.True(t, ok)
		done <- out
	}()
	<-waiting
	remember(key, "SUCCESS (the holder's output)\n")
	require.NoError(t, os.Remove(lock))
	assert.Equal(t, "SUCCESS (the holder's output)\n", <-done)
	assert.Zero(t, invocations(t, log))
}

// TestADeadHoldersLockIsTakenOver: a lock left by a process that is gone (a test binary
// killed mid-run) does not hold up the next run.
func TestADeadHoldersLockIsTakenOver(t *testing.T) {
	log := setup(t)
	dir := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": testFile("g1")})
	key, ok := ContentDigest(Path(t), dir, []string{"test", "rules", "t.yaml"})
	require.True(t, ok)
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	require.NoError(t, os.MkdirAll(CacheDir(), 0o755))
	lock := filepath.Join(CacheDir(), key+".lock")
	require.NoError(t, os.WriteFile(lock, []byte(fmt.Sprintf("%d\n", gone.Process.Pid)), 0o644))
	out, ok := Run(t, dir, "test", "rules", "t.yaml")
	require.True(t, ok, out)
	assert.Equal(t, 1, invocations(t, log))
	assert.NoFileExists(t, lock)
}

// TestTheScriptAndTheTestsShareContent: scripts/promtool.sh computes the content key as Run
// does, both ways: a run one of them passed in a directory is recalled by the other for the
// same rules and tests under other names in another directory.
func TestTheScriptAndTheTestsShareContent(t *testing.T) {
	log := setup(t)
	script, err := filepath.Abs("../../scripts/promtool.sh")
	require.NoError(t, err)
	sh := func(dir string, args ...string) string {
		out, err := exec.Command(script, append([]string{dir}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	named := func(rules, test string, groups ...string) string {
		return writeDir(t, map[string]string{rules: "groups: []\n", test: strings.Replace(testFile(groups...), "rules.yaml", rules, 1), "other.md": rules})
	}
	_, ok := Run(t, named("rules.yaml", "t.yaml", "g1", "g2"), "test", "rules", "--run", "^g", "t.yaml")
	require.True(t, ok)
	n := invocations(t, log)
	assert.Contains(t, sh(named("stormwatch-rules.yaml", "s.test.yaml", "g1", "g2"), "test", "rules", "--run", "^g", "s.test.yaml"), "passed before")
	sh(named("r.yaml", "x.yaml", "g3"), "check", "rules", "--lint=all", "r.yaml")
	assert.Equal(t, n+1, invocations(t, log), "the Go run recalled by the script; a new check run")
	_, ok = Run(t, named("r2.yaml", "y.yaml", "g3"), "check", "rules", "--lint=all", "r2.yaml")
	require.True(t, ok)
	sh(named("r3.yaml", "z.yaml", "g3"), "test", "rules", "z.yaml")
	_, ok = Run(t, named("r4.yaml", "w.yaml", "g3"), "test", "rules", "w.yaml")
	require.True(t, ok)
	assert.Equal(t, n+2, invocations(t, log), "the script's runs recalled by Run")

	for _, tf := range []string{
		"rule_files: [rules.yaml]\ntests: []\n",
		"rule_files:\n  - 'rules.yaml'\ntests: []\n",
		"rule_files:\n  - rules.yaml # the rules\ntests: []\n",
		"rule_files:\n  # the rules\n  - rules.yaml\ntests: []\n",
		"rule_files:\n  - missing.yaml\ntests: []\n",
	} {
		dir := writeDir(t, map[string]string{"rules.yaml": "groups: []\n", "t.yaml": tf})
		_, ok := ContentDigest(Path(t), dir, []string{"test", "rules", "t.yaml"})
		assert.False(t, ok, "no content key for %q", tf)
		cmd := exec.Command("bash", "-c", `source <(sed -n '/^content_key() {/,/^}/p' "$0"); version=v; cd "$1" && content_key test rules t.yaml`, script, dir)
		out, err := cmd.CombinedOutput()
		assert.Error(t, err, "the script has none either for %q: %s", tf, out)
	}
}
