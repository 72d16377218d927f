package ticks

import (
	"bytes"
	"os"
	_ "unsafe" // go:linkname
)

// cputicks is the runtime's read of the time-stamp counter (RDTSCP, or LFENCE and RDTSC).
//
//go:linkname cputicks runtime.cputicks
func cputicks() int64

// supported reports whether the kernel keeps time with the time-stamp counter.
func supported() bool {
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && string(bytes.TrimSpace(b)) == "tsc"
}
