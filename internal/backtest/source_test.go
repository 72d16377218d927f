package backtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormwatch-go/stormwatch/rules"
)

// fakeAPI is a Prometheus HTTP API on loopback: /api/v1/query_range answers with series(expr,
// ts) at each step, refusing more than maxPoints steps as Prometheus refuses too many points;
// /api/v1/series answers hasSeries(match).
type fakeAPI struct {
	mu        sync.Mutex
	series    func(expr string, ts time.Time) map[string]float64 // label set JSON → value
	hasSeries func(match string) bool
	maxPoints int
	refuseAll bool
	status    int // when set, every answer is this status with no body
	requests  []*http.Request
	queries   []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = r.ParseForm()
	f.requests = append(f.requests, r)
	if f.status != 0 {
		w.WriteHeader(f.status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v1/series":
		data := "[]"
		if f.hasSeries != nil && f.hasSeries(r.Form.Get("match[]")) {
			data = `[{"__name__":"x"}]`
		}
		fmt.Fprintf(w, `{"status":"success","data":%s}`, data)
	case "/api/v1/rules":
		fmt.Fprint(w, `{"status":"success","data":{"groups":[{"name":"stormwatch-retry","interval":30}]}}`)
	case "/api/v1/query_range":
		f.queryRange(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAPI) queryRange(w http.ResponseWriter, r *http.Request) {
	start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
	end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
	step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
	expr := r.Form.Get("query")
	f.queries = append(f.queries, expr)
	n := int((end-start)/step) + 1
	if f.refuseAll || (f.maxPoints > 0 && n > f.maxPoints) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"}`)
		return
	}
	values := map[string][][2]any{}
	for i := range n {
		ts := start + float64(i)*step
		if f.series == nil {
			break
		}
		for ls, v := range f.series(expr, time.Unix(0, int64(ts*1e9)).UTC()) {
			values[ls] = append(values[ls], [2]any{ts, strconv.FormatFloat(v, 'f', -1, 64)})
		}
	}
	type stream struct {
		Metric json.RawMessage `json:"metric"`
		Values [][2]any        `json:"values"`
	}
	var res []stream
	for ls, vs := range values {
		res = append(res, stream{json.RawMessage(ls), vs})
	}
	b, _ := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": res}})
	_, _ = w.Write(b)
}

func newFake(t *testing.T, f *fakeAPI, auth Auth) (*httptest.Server, *HTTPSource) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	src, err := NewHTTPSource(HTTPConfig{URL: srv.URL, Auth: auth, Timeout: 5 * time.Second})
	require.NoError(t, err)
	return srv, src
}

func TestHTTPSourceSplitsTooLargeQueries(t *testing.T) {
	f := &fakeAPI{maxPoints: 3, series: func(_ string, ts time.Time) map[string]float64 {
		return map[string]float64{`{"job":"a"}`: float64(ts.Unix())}
	}}
	_, src := newFake(t, f, Auth{})
	m, err := src.QueryRange(context.Background(), "up", Range{Start: time.Unix(0, 0), End: time.Unix(9, 0), Step: time.Second})
	require.NoError(t, err)
	require.Len(t, m, 1, "the halves' series are merged")
	require.Len(t, m[0].Values, 10)
	for i, v := range m[0].Values {
		assert.Equal(t, float64(i), float64(v.Value), "sample %d in order", i)
	}
	assert.Equal(t, 3, src.Splits, "10 steps → 5+5 → 3+2 and 3+2")
}

func TestHTTPSourceTooLargeAtOneStep(t *testing.T) {
	f := &fakeAPI{maxPoints: 1}
	_, src := newFake(t, f, Auth{})
	_, err := src.QueryRange(context.Background(), "up", Range{Start: time.Unix(0, 0), End: time.Unix(1, 0), Step: time.Second})
	require.NoError(t, err, "two points split into two single points")
	assert.Equal(t, 1, src.Splits)

	f.refuseAll = true
	_, err = src.QueryRange(context.Background(), "up", Range{Start: time.Unix(0, 0), End: time.Unix(3, 0), Step: time.Second})
	require.ErrorIs(t, err, ErrTooLarge, "refused even at one step")
	assert.Contains(t, err.Error(), "exceeded maximum resolution")
}

func TestHTTPSourceAuthAndErrors(t *testing.T) {
	const token = "s3cr3t-t0ken"
	f := &fakeAPI{status: http.StatusUnauthorized}
	srv, src := newFake(t, f, Auth{BearerToken: token})
	_, err := src.QueryRange(context.Background(), "up", Range{Start: time.Unix(0, 0), End: time.Unix(60, 0), Step: time.Minute})
	require.ErrorIs(t, err, ErrAuth)
	assert.NotContains(t, err.Error(), token)
	assert.Contains(t, err.Error(), "401")
	require.NotEmpty(t, f.requests)
	assert.Equal(t, "Bearer "+token, f.requests[0].Header.Get("Authorization"))

	f.status = http.StatusForbidden
	_, err = src.HasSeries(context.Background(), "up", time.Unix(0, 0), time.Unix(60, 0))
	require.ErrorIs(t, err, ErrAuth)

	f.status = 0
	basic, err := NewHTTPSource(HTTPConfig{URL: srv.URL, Auth: Auth{Username: "u", Password: "pw-secret"}})
	require.NoError(t, err)
	_, err = basic.HasSeries(context.Background(), "up", time.Unix(0, 0), time.Unix(60, 0))
	require.NoError(t, err)
	user, pass, ok := f.requests[len(f.requests)-1].BasicAuth()
	assert.True(t, ok)
	assert.Equal(t, "u", user)
	assert.Equal(t, "pw-secret", pass)

	f.status = http.StatusBadGateway
	_, err = src.HasSeries(context.Background(), "up", time.Unix(0, 0), time.Unix(60, 0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 502")
}

func TestHTTPSourceUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	src, err := NewHTTPSource(HTTPConfig{URL: "http://" + addr, Auth: Auth{BearerToken: "tok"}, Timeout: 5 * time.Second})
	require.NoError(t, err)
	_, err = src.HasSeries(context.Background(), `up{job="x"}`, time.Unix(0, 0), time.Unix(60, 0))
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Contains(t, err.Error(), addr)
	assert.NotContains(t, err.Error(), "tok")
	assert.NotContains(t, err.Error(), "up{", "no query in the message")
}

func TestNewHTTPSourceRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "localhost:9090", "ftp://x", "http://user:pw@host:9090"} {
		_, err := NewHTTPSource(HTTPConfig{URL: u})
		require.Error(t, err, u)
		assert.NotContains(t, err.Error(), "pw", u)
	}
}

func TestCheckData(t *testing.T) {
	var seen string
	f := &fakeAPI{hasSeries: func(m string) bool { seen = m; return false }}
	_, src := newFake(t, f, Auth{})
	err := CheckData(context.Background(), src, rules.Config{Selector: `job="checkout"`}, time.Unix(0, 0), time.Unix(3600, 0))
	require.ErrorIs(t, err, ErrNoData)
	assert.Contains(t, err.Error(), "resilience_")
	assert.Contains(t, err.Error(), `job="checkout"`)
	assert.True(t, strings.HasPrefix(seen, `{__name__=~"`), seen)
	assert.Contains(t, seen, "resilience_retry_calls_total")
	assert.True(t, strings.HasSuffix(seen, `, job="checkout"}`), seen)

	f.hasSeries = func(string) bool { return true }
	require.NoError(t, CheckData(context.Background(), src, rules.Config{}, time.Unix(0, 0), time.Unix(3600, 0)))
}

func TestRuleGroupIntervals(t *testing.T) {
	_, src := newFake(t, &fakeAPI{}, Auth{})
	got, err := src.RuleGroupIntervals(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Duration{"stormwatch-retry": 30 * time.Second}, got)
}

func TestTooLargeMessages(t *testing.T) {
	for _, msg := range []string{
		"exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
		"query processing would load too many samples into memory in query execution",
		"the query time range exceeds the limit (query length: 745h, limit: 721h)",
		"expanding series: the query hit the max number of chunks limit (limit: 2000000 chunks)",
		"cannot select more than -search.maxSamplesPerQuery=1000000000 samples",
	} {
		assert.True(t, tooLarge.MatchString(msg), msg)
	}
	assert.False(t, tooLarge.MatchString(`1:5: parse error: unexpected "}"`))
	assert.False(t, errors.Is(fmt.Errorf("x"), ErrTooLarge))
}
