package main

import (
	"io"
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
