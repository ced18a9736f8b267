package fairness

import (
	"testing"
	"time"
)

func TestMeter(t *testing.T) {
	m := NewMeter(10, 3)
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		if m.Behind("a", t0) {
			t.Fatalf("invocation %d of the burst is behind", i+1)
		}
	}
	if !m.Behind("a", t0) {
		t.Fatal("the fourth at once is not behind")
	}
	if m.Behind("b", t0) {
		t.Fatal("another organization's first is behind")
	}
	// A tenth of a second later a's bucket has one token again.
	if m.Behind("a", t0.Add(100*time.Millisecond)) {
		t.Fatal("one within the rate is behind")
	}
	if !m.Behind("a", t0.Add(100*time.Millisecond)) {
		t.Fatal("a second at the same moment is not behind")
	}
}

func TestMeter_ForgetsIdleOrganizations(t *testing.T) {
	m := NewMeter(10, 3)
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	m.Behind("idle", t0)
	for range 4 {
		m.Behind("busy", t0.Add(sweepEvery))
	}
	// The sweep at t0+sweepEvery forgot the idle one (its bucket full)
	// and kept the busy one, whose bucket it had just emptied... after
	// its first call: the sweep runs before counting.
	if _, ok := m.orgs["idle"]; ok {
		t.Fatal("an idle organization was kept")
	}
	if _, ok := m.orgs["busy"]; !ok {
		t.Fatal("a busy organization was forgotten")
	}
	if !m.Behind("busy", t0.Add(sweepEvery+time.Millisecond)) {
		t.Fatal("the busy one's state was lost")
	}
}
