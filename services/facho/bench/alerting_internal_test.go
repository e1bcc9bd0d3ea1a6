package bench

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

func TestChurnPercentsGiveTheAskedChangesPerInterval(t *testing.T) {
	for _, tc := range []struct{ churn, ticks float64 }{{10, 1}, {10, 2}, {5, 2}, {20, 1}, {50, 1}} {
		off, on := churnPercents(tc.churn, tc.ticks)
		x, y := off/100, on/100
		// In the steady state x/(x+y) of the fleet is offline; a tick
		// changes (1-f)x + f y of it.
		f := x / (x + y)
		perInterval := ((1-f)*x + f*y) * tc.ticks * 100
		if math.Abs(perInterval-tc.churn) > 1e-9 {
			t.Errorf("churn %g over %g ticks: offline %g %%, online %g %% a tick give %g %% per interval", tc.churn, tc.ticks, off, on, perInterval)
		}
	}
}

func TestLagQuantileOfTheSamplesBetweenTwoSnapshots(t *testing.T) {
	before := []lagBucket{{0.1, 10}, {1, 10}, {10, 10}, {math.Inf(1), 10}}
	after := []lagBucket{{0.1, 20}, {1, 29}, {10, 30}, {math.Inf(1), 30}}
	tests := []struct {
		q    float64
		want float64
	}{{0.5, 0.1}, {0.9, 1}, {0.99, 10}}
	for _, tc := range tests {
		if got := lagQuantile(after, before, tc.q); got != tc.want {
			t.Errorf("q %g: %g, want %g", tc.q, got, tc.want)
		}
	}
	if got := lagQuantile(before, before, 0.5); got != -1 {
		t.Errorf("no sample between: %g, want -1", got)
	}
}

// A lag beyond the histogram's top bucket is written as that bound and
// named, so the result still encodes as JSON (it has no infinity).
func TestLagAboveTopBucketEncodes(t *testing.T) {
	lag := []lagBucket{{0.5, 1}, {4, 2}, {math.Inf(1), 10}}
	a := &Alerting{LagP50: lagQuantile(lag, nil, 0.5), LagP99: lagQuantile(lag, nil, 0.99), SteadyLagP50: 0.5}
	a.finiteLags(lag)
	if a.LagP99 != 4 || a.LagP50 != 4 || a.SteadyLagP50 != 0.5 {
		t.Errorf("lags %v %v %v, want 4 4 0.5", a.LagP50, a.LagP99, a.SteadyLagP50)
	}
	if want := []string{"p50", "p99"}; !slices.Equal(a.AboveTopBucket, want) {
		t.Errorf("above the top bucket: %v, want %v", a.AboveTopBucket, want)
	}
	if _, err := json.Marshal(Result{Alerting: a}); err != nil {
		t.Errorf("encode: %v", err)
	}
}
