package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-n", "500, 2000", "-rules", "a.yaml,b.yaml", "-rounds", "2", "-m", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.sizes) != 2 || o.sizes[0] != 500 || o.sizes[1] != 2000 || o.exporters != 3 || o.rounds != 2 ||
		strings.Join(o.rulesFiles, "|") != "a.yaml|b.yaml" || o.interval != 5*time.Second || o.cycles != 6 {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{{"-n", "0"}, {"-n", "x"}, {"-m", "0"}, {"-interval", "100ms"}, {"-cycles", "0"}, {"-rounds", "0"}} {
		var msg strings.Builder
		if _, err := parseFlags(bad, &msg); err == nil {
			t.Errorf("%v: accepted", bad)
		} else if !strings.Contains(msg.String(), bad[0]) {
			t.Errorf("%v: the message %q does not name the flag", bad, msg.String())
		}
	}
}

// TestRuleFilesNone shows that none measures scraping alone whether it arrives as it is or made
// absolute by `make bench-fleet`, that a file named none is read as a rule file, and that a
// missing file is an error.
func TestRuleFilesNone(t *testing.T) {
	dir := t.TempDir()
	rf := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rf, []byte("groups: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, labels, err := ruleFiles([]string{rf, "none", filepath.Join(dir, "none")}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, "|") != rf+"||" || strings.Join(labels, "|") != rf+"|none|none" {
		t.Errorf("files %q, labels %q", files, labels)
	}
	named := filepath.Join(dir, "none")
	if err := os.WriteFile(named, []byte("groups: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if files, _, err := ruleFiles([]string{named}, dir); err != nil || files[0] != named {
		t.Errorf("a rule file named none: %q, %v", files, err)
	}
	if _, _, err := ruleFiles([]string{filepath.Join(dir, "missing.yaml")}, dir); err == nil {
		t.Error("a missing rule file: no error")
	}
}
