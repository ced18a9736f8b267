package policy

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// QuietWindow is a daily window, in a time zone, during which jobs wait.
// Start and End are minutes after local midnight; a window whose End is not
// after its Start wraps past midnight (22:00–07:00).
type QuietWindow struct {
	TimeZone string
	Start    int
	End      int
}

// ParseClock parses "HH:MM" into minutes after midnight.
func ParseClock(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a HH:MM time", s)
	}
	return t.Hour()*60 + t.Minute(), nil
}

// FormatClock formats minutes after midnight as "HH:MM".
func FormatClock(minutes int) string {
	return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60)
}

// Wait returns how long until the window ends when now is inside it, and 0
// when it is not. Days that skip or repeat an hour (DST) are handled by
// computing the end in local wall time.
func (w QuietWindow) Wait(now time.Time) (time.Duration, error) {
	loc, err := time.LoadLocation(w.TimeZone)
	if err != nil {
		return 0, fmt.Errorf("quiet hours time zone: %w", err)
	}
	if w.Start == w.End {
		return 0, nil
	}
	local := now.In(loc)
	minute := local.Hour()*60 + local.Minute()
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	at := func(day time.Time, minutes int) time.Time {
		return time.Date(day.Year(), day.Month(), day.Day(), minutes/60, minutes%60, 0, 0, loc)
	}
	var end time.Time
	switch {
	case w.Start < w.End && minute >= w.Start && minute < w.End:
		end = at(midnight, w.End)
	case w.Start > w.End && minute >= w.Start:
		end = at(midnight.AddDate(0, 0, 1), w.End)
	case w.Start > w.End && minute < w.End:
		end = at(midnight, w.End)
	default:
		return 0, nil
	}
	if end.After(now) {
		return end.Sub(now), nil
	}
	// now is in the second pass of an hour a DST change repeats, and
	// time.Date put the end in the first: the window ends when the wall
	// clock reaches End again, with no other change in between.
	into := time.Duration(local.Second())*time.Second + time.Duration(local.Nanosecond())
	return time.Duration(w.End-minute)*time.Minute - into, nil
}

// MatchRecipient reports the first do-not-contact pattern matching value.
// Patterns are shell globs (path.Match: *, ?, [...]), compared
// case-insensitively; a leading "#" or "@" on either side is ignored so
// "#general" matches "general". A recipient is not a path: * and ? match
// a "/" too.
func MatchRecipient(patterns []string, value string) (string, bool) {
	v := normalizeRecipient(value)
	for _, p := range patterns {
		if ok, err := path.Match(normalizeRecipient(p), v); err == nil && ok {
			return p, true
		}
	}
	return "", false
}

// ValidRecipientPattern reports whether p is a well-formed glob.
func ValidRecipientPattern(p string) bool {
	if strings.TrimSpace(p) == "" {
		return false
	}
	_, err := path.Match(normalizeRecipient(p), "")
	return err == nil
}

// normalizeRecipient puts a pattern or a value in the form they are
// matched in. "/" becomes NUL, which no stored value holds, so that
// path.Match's * and ? match it.
func normalizeRecipient(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimLeft(strings.TrimSpace(s), "#@")), "/", "\x00")
}
