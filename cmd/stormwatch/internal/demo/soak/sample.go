package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// exposition is what one /metrics response says about the process.
type exposition struct {
	bytes, series int
	// The unlabelled gauges the soak reads, by name (go_goroutines; process_resident_memory_bytes
	// and process_open_fds where the process collector supports the platform).
	gauges map[string]float64
}

// The gauges read from /metrics.
const (
	goGoroutines = "go_goroutines"
	processRSS   = "process_resident_memory_bytes"
	processFDs   = "process_open_fds"
)

// parseExposition counts the series (sample lines) of a text-format /metrics response and reads
// the gauges the soak needs.
func parseExposition(body []byte) (exposition, error) {
	e := exposition{bytes: len(body), gauges: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		e.series++
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.ContainsRune(name, '{') {
			continue
		}
		switch name {
		case goGoroutines, processRSS, processFDs:
			value, _, _ = strings.Cut(strings.TrimSpace(value), " ") // drop a timestamp
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return e, fmt.Errorf("/metrics: %s %q: %v", name, value, err)
			}
			e.gauges[name] = f
		}
	}
	if err := sc.Err(); err != nil {
		return e, fmt.Errorf("/metrics: %v", err)
	}
	if _, ok := e.gauges[goGoroutines]; !ok {
		return e, fmt.Errorf("/metrics: no %s (is the Go collector registered?)", goGoroutines)
	}
	return e, nil
}

// scrape gets url and parses the response.
func scrape(ctx context.Context, client *http.Client, url string) (exposition, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return exposition{}, err
	}
	req.Header.Set("Accept", "text/plain") // the text format, which parseExposition reads
	resp, err := client.Do(req)
	if err != nil {
		return exposition{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return exposition{}, fmt.Errorf("reading /metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return exposition{}, fmt.Errorf("/metrics answered %s", resp.Status)
	}
	return parseExposition(body)
}

// errNoProc says /proc/<pid> cannot be read (not Linux): the process collector's gauges stand in.
var errNoProc = errors.New("no /proc")

// procStats reads the resident set size (bytes) and the number of open file descriptors of
// process pid from /proc: the kernel's view, not the process's own report.
func procStats(pid int) (rss uint64, fds int, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errNoProc, err)
	}
	if rss, err = parseVmRSS(status); err != nil {
		return 0, 0, err
	}
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errNoProc, err)
	}
	return rss, len(entries), nil
}

// parseVmRSS reads the VmRSS line of /proc/<pid>/status ("VmRSS:	  12345 kB").
func parseVmRSS(status []byte) (uint64, error) {
	for line := range strings.SplitSeq(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc status: unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status: VmRSS %q: %v", f[0], err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("/proc status: no VmRSS line (has the process exited?)")
}

// measure takes one sample of process pid serving /metrics on url: RSS and fds from /proc
// (before the scrape, whose connection would count), or else from the process collector's
// gauges; goroutines, size and series from the scrape.
func measure(ctx context.Context, client *http.Client, url string, pid int) Sample {
	var s Sample
	rss, fds, procErr := procStats(pid)
	e, err := scrape(ctx, client, url)
	if err != nil {
		s.Err = err
		return s
	}
	s.Goroutines, s.Bytes, s.Series = int(e.gauges[goGoroutines]), e.bytes, e.series
	switch {
	case procErr == nil:
		s.RSS, s.FDs = rss, fds
	case errors.Is(procErr, errNoProc):
		r, okR := e.gauges[processRSS]
		f, okF := e.gauges[processFDs]
		if !okR || !okF {
			s.Err = fmt.Errorf("%v, and /metrics has no %s and %s", procErr, processRSS, processFDs)
			return s
		}
		s.RSS, s.FDs = uint64(r), int(f)
	default:
		s.Err = procErr
	}
	return s
}
