package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormwatch-go/stormwatch/internal/backtest"
)

// parseTime reads a point in time: RFC 3339 (or a date, 2006-01-02, UTC), Unix seconds, now,
// or now-<duration> in Prometheus's syntax (now-7d, now-90m).
func parseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "now-"):
		d, err := model.ParseDuration(s[len("now-"):])
		if err != nil {
			return time.Time{}, fmt.Errorf("duration after now-: %v", err)
		}
		return now.Add(-time.Duration(d)), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 {
		sec, frac := int64(f), f-float64(int64(f))
		return time.Unix(sec, int64(frac*1e9)), nil
	}
	return time.Time{}, errors.New("want RFC 3339 (2026-11-01T10:00:00Z), a date, Unix seconds, now or now-<duration>")
}

// parseIncident reads START/END[:name]. The name follows the last colon that does not belong
// to END's time (RFC 3339 times hold colons themselves), so it holds none itself.
func parseIncident(s string, now time.Time) (backtest.Incident, error) {
	start, rest, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return backtest.Incident{}, errors.New("want START/END[:name]")
	}
	in := backtest.Incident{}
	var err error
	if in.Start, err = parseTime(start, now); err != nil {
		return in, fmt.Errorf("start: %v", err)
	}
	if in.End, err = parseTime(rest, now); err != nil {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return in, fmt.Errorf("end: %v", err)
		}
		if in.End, err = parseTime(rest[:i], now); err != nil {
			return in, fmt.Errorf("end: %v", err)
		}
		in.Name = rest[i+1:]
	}
	if !in.End.After(in.Start) {
		return in, errors.New("the end must be after the start")
	}
	return in, nil
}

// loadIncidents reads --incident and --incidents into r.incidents; --suggest needs at least
// one, and they need --suggest.
func (r *backtestRun) loadIncidents(now time.Time) error {
	f := &r.flags
	for _, s := range f.incidents {
		in, err := parseIncident(s, now)
		if err != nil {
			return usageErr("--incident", s, "%v", err)
		}
		r.incidents = append(r.incidents, in)
	}
	if f.incidentsFile != "" {
		if err := r.readIncidentsFile(now); err != nil {
			return err
		}
	}
	switch {
	case f.suggest && len(r.incidents) == 0:
		return usageErr("--suggest", true, "needs at least one --incident START/END[:name] or an --incidents file")
	case !f.suggest && len(r.incidents) > 0:
		return usageErr("--incident", f.incidents.String(), "incidents are for --suggest")
	}
	for _, in := range r.incidents {
		if in.Start.Before(r.start) || in.End.After(r.end) {
			return usageErr("--incident", in.Name, "%s to %s is not inside the range --from %s --to %s", in.Start.UTC().Format(time.RFC3339),
				in.End.UTC().Format(time.RFC3339), r.start.UTC().Format(time.RFC3339), r.end.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

func (r *backtestRun) readIncidentsFile(now time.Time) error {
	file, err := os.Open(r.flags.incidentsFile)
	if err != nil {
		return usageErr("--incidents", r.flags.incidentsFile, "%v", errors.Unwrap(err))
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		in, err := parseIncident(line, now)
		if err != nil {
			return usageErr(fmt.Sprintf("--incidents %s:%d", r.flags.incidentsFile, n), line, "%v", err)
		}
		r.incidents = append(r.incidents, in)
	}
	return sc.Err()
}

// credentials reads the bearer token or basic-auth password from their files or the
// environment. Their values never reach a message.
func credentials(f *backtestFlags) (backtest.Auth, error) {
	var a backtest.Auth
	var err error
	a.BearerToken = os.Getenv(envBearerToken)
	if f.tokenFile != "" {
		if a.BearerToken, err = readSecret(f.tokenFile); err != nil {
			return a, usageErr("--bearer-token-file", f.tokenFile, "%v", err)
		}
	}
	a.Username = f.basicUser
	if a.Username == "" {
		a.Username = os.Getenv(envBasicUser)
	}
	a.Password = os.Getenv(envBasicPassword)
	if f.passwordFile != "" {
		if a.Password, err = readSecret(f.passwordFile); err != nil {
			return a, usageErr("--basic-auth-password-file", f.passwordFile, "%v", err)
		}
	}
	if a.BearerToken != "" && a.Username != "" {
		return a, usageErr("--bearer-token-file", nil, "a bearer token and basic auth are both set (flags or %s, %s): choose one", envBearerToken, envBasicUser)
	}
	if a.Password != "" && a.Username == "" {
		return a, usageErr("--basic-auth-user", "", "a basic-auth password is set but no user")
	}
	return a, nil
}

// readSecret reads a credential file, without its trailing newline.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", err
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", errors.New("empty")
	}
	return s, nil
}
