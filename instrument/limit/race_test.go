//go:build race

package limit

import "time"

// longRun is the length of the long simulations: shorter under the race detector, which slows
// the single-goroutine simulation tenfold without adding anything to check.
const longRun = 5 * time.Minute
