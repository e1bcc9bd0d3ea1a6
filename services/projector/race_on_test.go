//go:build race

package projector

// raceEnabled: the race detector is on (5-10x slower): the 100k-event
// rebuild tests run a tenth of their events.
const raceEnabled = true
