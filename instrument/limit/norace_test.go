//go:build !race

package limit

import "time"

const longRun = 30 * time.Minute
