package backtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/model"
)

// Source answers the range queries of a backtest: a Prometheus-compatible HTTP API
// (Prometheus, Mimir, Thanos Query, VictoriaMetrics) or, in tests, a fake.
type Source interface {
	// QueryRange evaluates expr at start, start+step, … up to end.
	QueryRange(ctx context.Context, expr string, r Range) (model.Matrix, error)
	// HasSeries reports whether any series matching match has samples in [start, end].
	HasSeries(ctx context.Context, match string, start, end time.Time) (bool, error)
}

// Sentinel errors, matched with errors.Is.
var (
	// ErrUnreachable: the server did not answer (connection refused, DNS, timeout).
	ErrUnreachable = errors.New("prometheus server unreachable")
	// ErrAuth: the server refused the credentials (HTTP 401 or 403).
	ErrAuth = errors.New("prometheus server refused the credentials")
	// ErrTooLarge: the server refused a query as too large (points, samples, series or range)
	// even over a single evaluation step.
	ErrTooLarge = errors.New("query too large for the server")
	// ErrNoData: the range holds no series of the generated rules' metrics.
	ErrNoData = errors.New("no stormwatch series in the range")
)

// Auth holds the credentials sent with every request: a bearer token, or a basic-auth user and
// password. They are never logged, printed or put in an error.
type Auth struct {
	BearerToken        string
	Username, Password string
}

// HTTPConfig describes the server of an HTTP source.
type HTTPConfig struct {
	// URL is the server's base URL, e.g. http://prometheus:9090 or a Mimir/Thanos prefix.
	URL string
	Auth
	// Timeout bounds each request; 0 means one minute.
	Timeout time.Duration
	// Transport is the underlying round tripper; nil means http.DefaultTransport.
	Transport http.RoundTripper
}

// Range is the span and step of a range query.
type Range struct {
	Start, End time.Time
	Step       time.Duration
}

// HTTPSource queries a Prometheus-compatible HTTP API through client_golang's api.Client (the
// HTTP API's endpoints and JSON envelope are stable across servers and client versions). A
// range query the server refuses as too large is split in halves and retried, down to single
// steps.
type HTTPSource struct {
	client api.Client
	host   string
	// Splits counts the queries split because the server found them too large.
	Splits int
}

// NewHTTPSource returns a source reading the API at c.URL.
func NewHTTPSource(c HTTPConfig) (*HTTPSource, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--prometheus %q: want an http or https URL with a host", redactURL(c.URL))
	}
	if u.User != nil {
		return nil, fmt.Errorf("--prometheus %s: put credentials in --bearer-token-file or --basic-auth flags or the environment, not in the URL", redactURL(c.URL))
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	client, err := api.NewClient(api.Config{Address: c.URL, Client: &http.Client{
		Transport: &authTransport{base: base, auth: c.Auth}, Timeout: timeout,
		// A redirect would carry the credentials elsewhere: refuse it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}})
	if err != nil {
		return nil, fmt.Errorf("--prometheus %s: %w", redactURL(c.URL), err)
	}
	return &HTTPSource{client: client, host: u.Host}, nil
}

// redactURL drops userinfo and query from a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// authTransport adds the credentials and turns 401/403 into ErrAuth.
type authTransport struct {
	base http.RoundTripper
	auth Auth
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	switch {
	case t.auth.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+t.auth.BearerToken)
	case t.auth.Username != "":
		req.SetBasicAuth(t.auth.Username, t.auth.Password)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() != nil {
			return nil, req.Context().Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		resp.Body.Close()
		return nil, &authError{status: resp.StatusCode}
	}
	return resp, nil
}

// authError is a 401 or 403 answer; it matches ErrAuth.
type authError struct{ status int }

func (e *authError) Error() string        { return fmt.Sprintf("%v (HTTP %d)", ErrAuth, e.status) }
func (e *authError) Is(target error) bool { return target == ErrAuth }

// tooLarge matches the messages with which Prometheus, Mimir, Thanos and VictoriaMetrics
// refuse a query as too big.
var tooLarge = regexp.MustCompile(`(?i)too many|maximum resolution|exceeds? the (limit|maximum)|exceeded.*limit|max(imum)?[ _-]?(number of )?(samples|points|series|chunks)|query length|cannot select more than`)

// QueryRange implements Source, splitting the range when the server finds it too large.
func (s *HTTPSource) QueryRange(ctx context.Context, expr string, r Range) (model.Matrix, error) {
	var res struct {
		ResultType string       `json:"resultType"`
		Result     model.Matrix `json:"result"`
	}
	err := s.call(ctx, "/api/v1/query_range", url.Values{"query": {expr}, "start": {formatTime(r.Start)},
		"end": {formatTime(r.End)}, "step": {strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64)}}, &res)
	if err == nil {
		if res.ResultType != "matrix" {
			return nil, fmt.Errorf("%s: range query returned a %q, want a matrix", s.host, res.ResultType)
		}
		return res.Result, nil
	}
	if !errors.Is(err, ErrTooLarge) {
		return nil, err
	}
	steps := int(r.End.Sub(r.Start) / r.Step)
	if steps < 1 {
		return nil, err
	}
	s.Splits++
	mid := r.Start.Add(time.Duration(steps/2) * r.Step)
	a, err := s.QueryRange(ctx, expr, Range{Start: r.Start, End: mid, Step: r.Step})
	if err != nil {
		return nil, err
	}
	b, err := s.QueryRange(ctx, expr, Range{Start: mid.Add(r.Step), End: r.End, Step: r.Step})
	if err != nil {
		return nil, err
	}
	return mergeMatrices(a, b), nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64)
}

// maxBody bounds an answer of the server.
const maxBody = 1 << 30

// call POSTs args to the endpoint (falling back to GET where POST is refused, as read-only
// proxies do) and decodes the data of a success envelope into data.
func (s *HTTPSource) call(ctx context.Context, endpoint string, args url.Values, data any) error {
	u := s.client.URL(endpoint, nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(args.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body, err := s.client.Do(ctx, req)
	if err == nil && (resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		u.RawQuery = args.Encode()
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil); err != nil {
			return err
		}
		resp, body, err = s.client.Do(ctx, req)
	}
	if err != nil {
		return s.classify(err)
	}
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if jerr := json.Unmarshal(body, &env); jerr != nil || env.Status == "" {
		return s.classify(&apiError{status: resp.StatusCode, msg: fmt.Sprintf("HTTP %d, not a Prometheus API answer", resp.StatusCode)})
	}
	if env.Status != "success" {
		return s.classify(&apiError{status: resp.StatusCode, typ: env.ErrorType, msg: env.Error})
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		return fmt.Errorf("%s: decoding %s: %w", s.host, endpoint, err)
	}
	return nil
}

// apiError is an error answer of the server.
type apiError struct {
	status   int
	typ, msg string
}

func (e *apiError) Error() string { return e.typ + ": " + e.msg }

// HasSeries implements Source with the series endpoint (limit 1).
func (s *HTTPSource) HasSeries(ctx context.Context, match string, start, end time.Time) (bool, error) {
	var ls []model.LabelSet
	err := s.call(ctx, "/api/v1/series", url.Values{"match[]": {match}, "start": {formatTime(start)}, "end": {formatTime(end)}, "limit": {"1"}}, &ls)
	return len(ls) > 0, err
}

// RuleGroupIntervals returns the evaluation interval of each rule group the server runs, by
// group name (empty when it runs none or has no rules API, as Thanos Query without a ruler).
func (s *HTTPSource) RuleGroupIntervals(ctx context.Context) (map[string]time.Duration, error) {
	var res struct {
		Groups []struct {
			Name     string  `json:"name"`
			Interval float64 `json:"interval"`
		} `json:"groups"`
	}
	out := map[string]time.Duration{}
	if err := s.call(ctx, "/api/v1/rules", url.Values{"type": {"alert"}}, &res); err != nil {
		if errors.Is(err, ErrAuth) || errors.Is(err, ErrUnreachable) {
			return nil, err
		}
		return out, nil
	}
	for _, g := range res.Groups {
		out[g.Name] = time.Duration(g.Interval * float64(time.Second))
	}
	return out, nil
}

// classify maps a client_golang error to the sentinels, without the response body.
func (s *HTTPSource) classify(err error) error {
	switch {
	case errors.Is(err, ErrAuth):
		var ae *authError
		if errors.As(err, &ae) {
			return fmt.Errorf("%s: %w", s.host, ae)
		}
		return fmt.Errorf("%s: %w", s.host, ErrAuth)
	case errors.Is(err, ErrUnreachable):
		var ne net.Error
		detail := ""
		if errors.As(err, &ne) && ne.Timeout() {
			detail = " (timeout)"
		}
		return fmt.Errorf("%s: %w%s", s.host, ErrUnreachable, detail)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	var ae *apiError
	if errors.As(err, &ae) {
		if tooLarge.MatchString(ae.msg) || ae.status == http.StatusRequestEntityTooLarge {
			return fmt.Errorf("%s: %w: %s", s.host, ErrTooLarge, firstLine(ae.msg))
		}
		if ae.typ == "" {
			return fmt.Errorf("%s: %s", s.host, firstLine(ae.msg))
		}
		return fmt.Errorf("%s: %s: %s", s.host, ae.typ, firstLine(ae.msg))
	}
	return fmt.Errorf("%s: %w", s.host, err)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// mergeMatrices joins the series of two matrices over adjacent ranges (a before b).
func mergeMatrices(a, b model.Matrix) model.Matrix {
	byFP := make(map[model.Fingerprint]*model.SampleStream, len(a))
	out := make(model.Matrix, 0, len(a)+len(b))
	for _, ss := range a {
		byFP[ss.Metric.Fingerprint()] = ss
		out = append(out, ss)
	}
	for _, ss := range b {
		if prev, ok := byFP[ss.Metric.Fingerprint()]; ok {
			prev.Values = append(prev.Values, ss.Values...)
			continue
		}
		out = append(out, ss)
	}
	sort.Sort(out)
	return out
}
