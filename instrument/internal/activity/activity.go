// Package activity lets the registry's idle eviction read how busy a circuit breaker is without
// the breaker exporting it: package breaker sets Breaker when it is initialised.
package activity

// Breaker returns, for a *breaker.Breaker, a number that moves whenever the breaker completes a
// call, and whether the breaker is settled — closed, with no failure or slow call in its window —
// so that replacing it with a fresh breaker would lose nothing that protects its dependency.
var Breaker func(b any) (n uint64, settled bool)
