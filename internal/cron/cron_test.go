package cron

import (
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"* * * *":      "has 4 fields",
		"60 * * * *":   "minute field",
		"* 24 * * *":   "hour field",
		"* * 0 * *":    "day of month field",
		"* * * 13 *":   "month field",
		"* * * * 8":    "day of week field",
		"5-1 * * * *":  "goes backwards",
		"*/0 * * * *":  "step",
		"1,,2 * * * *": "empty item",
		"* * * foo *":  "not a number from 1 to 12 or a name",
		"x y z w v":    "minute field",
	} {
		_, err := Parse(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", spec, err, want)
		}
	}
}

func TestNext(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string, loc *time.Location) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		spec, from, want string
		loc              *time.Location
	}{
		{"* * * * *", "2026-12-04 10:00", "2026-12-04 10:01", time.UTC},
		{"*/15 * * * *", "2026-12-04 10:07", "2026-12-04 10:15", time.UTC},
		{"0 9 * * 1-5", "2026-12-04 09:00", "2026-12-07 09:00", berlin}, // Friday 9:00 -> Monday
		{"0 9 * * mon-FRI", "2026-12-05 12:00", "2026-12-07 09:00", berlin},
		{"30 2 * * *", "2026-03-28 12:00", "2026-03-30 02:30", berlin},  // 2:30 does not exist that day
		{"0 0 1 * 0", "2026-12-02 00:00", "2026-12-06 00:00", time.UTC}, // day of month OR day of week
		{"0 0 * * 7", "2026-12-02 00:00", "2026-12-06 00:00", time.UTC}, // 7 is Sunday
		{"0 12 29 2 *", "2026-01-01 00:00", "2028-02-29 12:00", time.UTC},
		{"0 0 30 2 *", "2026-01-01 00:00", "", time.UTC},
	} {
		got := Parse1(t, c.spec).Next(at(c.from, c.loc), c.loc)
		if c.want == "" {
			if !got.IsZero() {
				t.Errorf("%q after %s = %s, want never", c.spec, c.from, got)
			}
			continue
		}
		if want := at(c.want, c.loc); !got.Equal(want) {
			t.Errorf("%q after %s = %s, want %s", c.spec, c.from, got, want)
		}
	}
}

func TestLatest(t *testing.T) {
	t.Parallel()
	s := Parse1(t, "0 * * * *")
	base := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	if got := s.Latest(base, base.Add(3*time.Hour+30*time.Minute), time.UTC); !got.Equal(base.Add(3 * time.Hour)) {
		t.Errorf("Latest = %s", got)
	}
	if got := s.Latest(base, base.Add(59*time.Minute), time.UTC); !got.IsZero() {
		t.Errorf("Latest with no fire = %s", got)
	}
}

func Parse1(t *testing.T, spec string) *Schedule {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
