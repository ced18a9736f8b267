package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestQuietWindow_Wait(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	at := func(day, h, m int) time.Time { return time.Date(2026, 11, day, h, m, 0, 0, paris) }
	night := QuietWindow{TimeZone: "Europe/Paris", Start: 22 * 60, End: 7 * 60}
	office := QuietWindow{TimeZone: "Europe/Paris", Start: 12 * 60, End: 13 * 60}

	tests := []struct {
		name   string
		window QuietWindow
		now    time.Time
		want   time.Duration
	}{
		{"BeforeWrappingWindow", night, at(21, 21, 59), 0},
		{"LateEvening", night, at(21, 23, 30), 7*time.Hour + 30*time.Minute},
		{"EarlyMorning", night, at(22, 6, 0), time.Hour},
		{"AtEnd", night, at(22, 7, 0), 0},
		{"InsideDaytime", office, at(21, 12, 15), 45 * time.Minute},
		{"AfterDaytime", office, at(21, 13, 0), 0},
		{"UTCInstantInParisWindow", night, time.Date(2026, 11, 21, 22, 30, 0, 0, time.UTC), 7*time.Hour + 30*time.Minute},
		{"EmptyWindow", QuietWindow{TimeZone: "UTC", Start: 60, End: 60}, at(21, 1, 0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.window.Wait(tt.now)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	// New York repeats 01:00–02:00 on 2026-11-01 (EDT, then EST): in the
	// second pass the window still holds jobs until 01:30 EST.
	newYork := QuietWindow{TimeZone: "America/New_York", Start: 22 * 60, End: 90}
	for _, tt := range []struct {
		now  time.Time
		want time.Duration
	}{
		{time.Date(2026, 11, 1, 5, 10, 0, 0, time.UTC), 20 * time.Minute},                 // 01:10 EDT
		{time.Date(2026, 11, 1, 6, 10, 30, 0, time.UTC), 19*time.Minute + 30*time.Second}, // 01:10:30 EST
		{time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), 0},                                // 01:30 EST
	} {
		got, err := newYork.Wait(tt.now)
		require.NoError(t, err)
		require.Equal(t, tt.want, got, tt.now.String())
	}
	_, err = QuietWindow{TimeZone: "Mars/Olympus"}.Wait(time.Now())
	require.Error(t, err)
}

func TestParseClock(t *testing.T) {
	t.Parallel()
	m, err := ParseClock("07:30")
	require.NoError(t, err)
	require.Equal(t, 450, m)
	require.Equal(t, "07:30", FormatClock(m))
	for _, bad := range []string{"7", "24:00", "12:60", "noon", ""} {
		_, err := ParseClock(bad)
		require.Error(t, err, bad)
	}
}

func TestMatchRecipient(t *testing.T) {
	t.Parallel()
	patterns := []string{"#general", "C09*", "@ceo"}
	for value, want := range map[string]string{
		"#general": "#general", "general": "#general", "GENERAL": "#general",
		"C0912345": "C09*", "c09abc": "C09*", "ceo": "@ceo",
	} {
		got, ok := MatchRecipient(patterns, value)
		require.True(t, ok, value)
		require.Equal(t, want, got, value)
	}
	for _, value := range []string{"#random", "C1234", "ceo-office"} {
		_, ok := MatchRecipient(patterns, value)
		require.False(t, ok, value)
	}
	// A recipient is not a path: a "/" in it does not stop * or ?.
	for value, pattern := range map[string]string{
		"team/secret/room": "*secret*", "acme/ops": "acme?ops", "a/b": "a/*", "x/y": "x[/]y",
	} {
		got, ok := MatchRecipient([]string{pattern}, value)
		require.True(t, ok, value)
		require.Equal(t, pattern, got)
	}
	_, ok := MatchRecipient([]string{"a/*"}, "ab")
	require.False(t, ok)
	require.True(t, ValidRecipientPattern("C0*"))
	require.False(t, ValidRecipientPattern("[unclosed"))
	require.False(t, ValidRecipientPattern("  "))
}
