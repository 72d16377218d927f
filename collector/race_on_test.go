//go:build race

package collector

// raceEnabled: the race detector is on (its slow-down scales some tests down).
const raceEnabled = true
