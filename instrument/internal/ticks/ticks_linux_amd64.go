package ticks

import (
	"bytes"
	"os"
)

// rdtsc reads the time-stamp counter (rdtsc_linux_amd64.s).
func rdtsc() int64

func cputicks() int64 { return rdtsc() }

// supported reports whether the kernel keeps time with the time-stamp counter.
func supported() bool {
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && string(bytes.TrimSpace(b)) == "tsc"
}
