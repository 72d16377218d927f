package httpx

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/instrument"
	"github.com/stormwatch-go/stormwatch/instrument/clock"
	"github.com/stormwatch-go/stormwatch/instrument/hedge"
)

const hedgeDelay = 50 * time.Millisecond

func hedgeConfig(clk clock.Clock) hedge.Config {
	return hedge.Config{Delay: hedgeDelay, Clock: clk}
}

type roundTrip struct {
	resp *http.Response
	err  error
}

func roundTripAsync(tr *Transport, req *http.Request) <-chan roundTrip {
	out := make(chan roundTrip, 1)
	go func() {
		resp, err := tr.RoundTrip(req)
		out <- roundTrip{resp, err}
	}()
	return out
}

func hedgeOutcomes(t *testing.T, tr *Transport, key string) map[string]uint64 {
	t.Helper()
	p, err := tr.Pipeline(key)
	require.NoError(t, err)
	require.NotNil(t, p.Hedge())
	sn := p.Hedge().Snapshot()
	m := map[string]uint64{"calls": sn.Calls}
	for _, o := range catalog.HedgeOutcomes {
		if n := sn.Hedges[o]; n > 0 {
			m[o.String()] = n
		}
	}
	return m
}

// TestAHedgeBeatsAStalledResponse: on loopback, the first request stalls; after the delay the
// transport sends the request again, with its body rewound, returns the hedge's response and
// cancels the first request (its handler sees the cancellation); every response body is closed
// and no goroutine is left.
func TestAHedgeBeatsAStalledResponse(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // after the server and the client are closed
	arrived := make(chan int64, 2)
	cancelled := make(chan struct{})
	srv := newServer(t, func(n int64, w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
		arrived <- n
		if n == 1 {
			select {
			case <-r.Context().Done():
				close(cancelled)
			case <-stop:
			}
			return
		}
		_, _ = io.WriteString(w, "from the hedge")
	})
	clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	base := newTracker(t)
	tr := newTransport(t, base, WithHedge(hedgeConfig(clk)))
	res := roundTripAsync(tr, request(t, context.Background(), http.MethodPut, srv.URL+"/items/7", "payload"))

	require.Equal(t, int64(1), <-arrived)
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(hedgeDelay)
	require.Equal(t, int64(2), <-arrived)

	r := <-res
	require.NoError(t, r.err)
	body, err := io.ReadAll(r.resp.Body)
	require.NoError(t, err, "the winner's body stays readable after the call")
	assert.Equal(t, "from the hedge", string(body))
	require.NoError(t, r.resp.Body.Close())
	select {
	case <-cancelled:
	case <-time.After(guard):
		t.Fatal("the stalled request was not cancelled")
	}
	bodies, _ := srv.seen()
	assert.Equal(t, []string{"payload", "payload"}, bodies, "the hedge sends the body again")
	assert.Empty(t, base.open(), "every response body is closed")
	assert.Equal(t, map[string]uint64{"calls": 1, "won": 1}, hedgeOutcomes(t, tr, hostKey(r.resp.Request)))
}

// stalledBase answers the first attempt only when its gate opens (nil gate: once the attempt
// is cancelled, like a response already on its way) and every other attempt at once. It
// remembers the bodies it handed out.
type stalledBase struct {
	n       atomic.Int32
	started chan int
	gate    chan struct{}
	bodies  [3]*trackedBody
}

func (b *stalledBase) RoundTrip(req *http.Request) (*http.Response, error) {
	i := int(b.n.Add(1))
	b.started <- i
	text := "fast"
	if i == 1 {
		if b.gate != nil {
			<-b.gate
		} else {
			<-req.Context().Done()
		}
		text = "slow"
	}
	body := &trackedBody{ReadCloser: io.NopCloser(strings.NewReader(text))}
	b.bodies[i] = body
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: body, Header: http.Header{},
		Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// TestALosersResponseIsClosed: the hedge wins, and the first attempt's response arrives
// after all: the transport drains and closes it, and returns the hedge's.
func TestALosersResponseIsClosed(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	base := &stalledBase{started: make(chan int, 3)}
	cfg := hedgeConfig(clk)
	tr := newTransport(t, base, WithPipeline(instrument.PipelineConfig{Retry: fastRetry(2), Hedge: &cfg}))
	res := roundTripAsync(tr, request(t, context.Background(), http.MethodGet, "http://catalog.test/items", ""))
	require.Equal(t, 1, <-base.started)
	require.True(t, clk.WaitForTimers(1, nil))
	clk.Advance(hedgeDelay)
	require.Equal(t, 2, <-base.started) // the hedge wins; the first attempt's response arrives after

	r := <-res
	require.NoError(t, r.err)
	body, _ := io.ReadAll(r.resp.Body)
	assert.Equal(t, "fast", string(body))
	assert.True(t, base.bodies[1].closed.Load(), "the loser's response is closed")
	assert.False(t, base.bodies[2].closed.Load(), "the winner's is the caller's to close")
	require.NoError(t, r.resp.Body.Close())
	assert.Equal(t, map[string]uint64{"calls": 1, "won": 1}, hedgeOutcomes(t, tr, "catalog.test"))
}

// TestOnlyIdempotentRewindableRequestsAreHedged: a POST (even with a generated idempotency
// key) and a request whose body cannot be rewound run once, however long they take.
func TestOnlyIdempotentRewindableRequestsAreHedged(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		req  func() *http.Request
	}{
		{"POST", nil, func() *http.Request {
			return request(t, context.Background(), http.MethodPost, "http://pay.test/charge", "amount=1")
		}},
		{"POST with a generated key", []Option{WithIdempotencyKeys(nil)}, func() *http.Request {
			return request(t, context.Background(), http.MethodPost, "http://pay.test/charge", "amount=1")
		}},
		{"PUT whose body cannot be rewound", nil, func() *http.Request {
			req := request(t, context.Background(), http.MethodPut, "http://pay.test/items/1", "")
			req.Body = io.NopCloser(strings.NewReader("payload"))
			return req
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
			base := &stalledBase{started: make(chan int, 3), gate: make(chan struct{})}
			tr := newTransport(t, base, append(tc.opts, WithHedge(hedgeConfig(clk)))...)
			res := roundTripAsync(tr, tc.req())
			require.Equal(t, 1, <-base.started)
			assert.Zero(t, clk.Timers(), "no hedge is scheduled")
			clk.Advance(time.Hour)
			close(base.gate)
			r := <-res
			require.NoError(t, r.err)
			require.NoError(t, r.resp.Body.Close())
			assert.Equal(t, int32(1), base.n.Load(), "sent once")
			assert.Equal(t, map[string]uint64{"calls": 1}, hedgeOutcomes(t, tr, "pay.test"))
		})
	}
}
