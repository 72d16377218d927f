package clock

import (
	"math/rand/v2"
	"sync"
)

// Rand is the random source of every jittered decision a primitive makes (open-duration jitter,
// backoff jitter, Retry-After jitter): Float64 returns a uniform draw in [0, 1). A Rand given to a
// primitive must be safe for concurrent use; wrap a *math/rand/v2.Rand with [Locked].
type Rand interface {
	Float64() float64
}

// Global draws from math/rand/v2's top-level source, which is safe for concurrent use. Its zero
// value is ready to use and is the default of every primitive.
type Global struct{}

// Float64 returns rand.Float64().
func (Global) Float64() float64 { return rand.Float64() }

// RandOr returns r, or [Global] when r is nil.
func RandOr(r Rand) Rand {
	if r == nil {
		return Global{}
	}
	return r
}

// Locked makes r safe for concurrent use by serialising its calls with a mutex.
func Locked(r Rand) Rand { return &locked{r: r} }

type locked struct {
	mu sync.Mutex
	r  Rand
}

func (l *locked) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}
