//go:build !race

package auditor_test

// raceEnabled: the race detector is on (5-10x slower): the 100k-event
// rebuild tests run a tenth of their events.
const raceEnabled = false
