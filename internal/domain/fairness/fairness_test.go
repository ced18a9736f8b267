package fairness

import (
	"testing"
	"time"
)

func TestMeter(t *testing.T) {
	m := NewMeter(10, 3)
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		if behind, _ := m.Behind("a", t0); behind {
			t.Fatalf("invocation %d of the burst is behind", i+1)
		}
	}
	if behind, tell := m.Behind("a", t0); !behind || !tell {
		t.Fatalf("the fourth at once: behind %v, tell %v; want both", behind, tell)
	}
	if behind, _ := m.Behind("b", t0); behind {
		t.Fatal("another organization's first is behind")
	}
	// A tenth of a second later a's bucket has one token again.
	if behind, _ := m.Behind("a", t0.Add(100*time.Millisecond)); behind {
		t.Fatal("one within the rate is behind")
	}
	if behind, tell := m.Behind("a", t0.Add(100*time.Millisecond)); !behind || tell {
		t.Fatalf("a second at the same moment: behind %v, tell %v; want behind, told already", behind, tell)
	}
	// A minute on, still flooding: told again.
	later := t0.Add(tellEvery)
	for range 3 {
		m.Behind("a", later)
	}
	if behind, tell := m.Behind("a", later); !behind || !tell {
		t.Fatalf("a minute later: behind %v, tell %v; want both", behind, tell)
	}
}

func TestMeter_ForgetsIdleOrganizations(t *testing.T) {
	m := NewMeter(10, 3)
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	m.Behind("idle", t0)
	// The first call at t0+sweepEvery sweeps before it counts: the idle
	// organization's bucket has filled again, the busy one is new.
	for range 4 {
		m.Behind("busy", t0.Add(sweepEvery))
	}
	if _, ok := m.orgs["idle"]; ok {
		t.Fatal("an idle organization was kept")
	}
	if _, ok := m.orgs["busy"]; !ok {
		t.Fatal("a busy organization was forgotten")
	}
	if behind, _ := m.Behind("busy", t0.Add(sweepEvery+time.Millisecond)); !behind {
		t.Fatal("the busy one's state was lost")
	}
}
