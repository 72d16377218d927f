package retry

import (
	"context"
	"testing"
)

func TestFirstAttemptSuccessAllocatesNothing(t *testing.T) {
	r, err := New("alloc", Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(1000, func() { _ = r.Do(ctx, fn) }); n != 0 {
		t.Fatalf("Do: %v allocs per call, want 0", n)
	}
	cfn := func(context.Context) (int, error) { return 1, nil }
	if n := testing.AllocsPerRun(1000, func() { _, _ = Call(ctx, r, cfn) }); n != 0 {
		t.Fatalf("Call: %v allocs per call, want 0", n)
	}
}

func BenchmarkDoFirstAttemptSuccess(b *testing.B) {
	r, _ := New("bench", Config{})
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Do(ctx, fn)
	}
}

// BenchmarkDoRetriedOnce is the failure path: a first attempt that fails (a 503 carrying the
// adapter hints), one retry without delay, success.
func BenchmarkDoRetriedOnce(b *testing.B) {
	r, _ := New("bench", Config{Backoff: Backoff{Strategy: None}, DisableBudget: true})
	ctx := context.Background()
	unavailable := &adapterErr{status: 503, idempotent: true}
	n := 0
	fn := func(context.Context) error {
		n++
		if n%2 == 1 {
			return unavailable
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Do(ctx, fn)
	}
}
