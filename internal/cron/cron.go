// Package cron parses the standard five-field cron syntax (minute, hour,
// day of month, month, day of week) and finds the times a schedule fires
// in a time zone. It is the schedule of a trigger's cron: (docs/format.md).
//
// Each field is *, a number, a range A-B, a list of them separated by
// commas, each optionally stepped (*/15, 1-30/2); month and day of week
// also take their three-letter English names (JAN, MON; either case), and
// a day of week of 7 is Sunday as 0 is. As in every cron, when both the
// day of month and the day of week are restricted (neither is *), a day
// matches when either matches.
package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed cron expression. The zero value matches nothing;
// use Parse.
type Schedule struct {
	minute, hour, dom, month, dow uint64 // bit i: value i matches
	domStar, dowStar              bool
}

type fieldSpec struct {
	name     string
	min, max int
	names    []string // names of min, min+1, ...
}

var fields = []fieldSpec{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{"day of week", 0, 7, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// Parse parses a five-field cron expression. Its error names the field
// at fault.
func Parse(spec string) (*Schedule, error) {
	parts := strings.Fields(spec)
	if len(parts) != 5 {
		return nil, fmt.Errorf("%q has %d fields: a cron expression has 5 (minute hour day-of-month month day-of-week), as \"0 9 * * 1-5\"", spec, len(parts))
	}
	var bits [5]uint64
	for i, p := range parts {
		b, err := parseField(p, fields[i])
		if err != nil {
			return nil, fmt.Errorf("%s field %q: %w", fields[i].name, p, err)
		}
		bits[i] = b
	}
	s := &Schedule{minute: bits[0], hour: bits[1], dom: bits[2], month: bits[3], dow: bits[4],
		domStar: strings.HasPrefix(parts[2], "*"), dowStar: strings.HasPrefix(parts[4], "*")}
	if s.dow&(1<<7) != 0 { // 7 is Sunday
		s.dow |= 1
	}
	return s, nil
}

// Same reports whether s and o fire at the same times: "0 9 * * 1-5" and
// "0 9 * * MON-FRI" are one schedule, as are a day of week 0 and 7.
func (s *Schedule) Same(o *Schedule) bool {
	const sunday7 = 1 << 7
	a, b := *s, *o
	a.dow &^= sunday7
	b.dow &^= sunday7
	return a == b
}

func parseField(p string, f fieldSpec) (uint64, error) {
	var bits uint64
	for item := range strings.SplitSeq(p, ",") {
		rng, stepText, stepped := strings.Cut(item, "/")
		step := 1
		if stepped {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.max {
				return 0, fmt.Errorf("step %q is not a number from 1 to %d", stepText, f.max)
			}
			step = n
		}
		lo, hi := f.min, f.max
		switch {
		case rng == "*":
			if f.name == "day of week" {
				hi = 6
			}
		case rng == "":
			return 0, fmt.Errorf("an empty item")
		default:
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = value(a, f); err != nil {
				return 0, err
			}
			hi = lo
			if isRange {
				if hi, err = value(b, f); err != nil {
					return 0, err
				}
				if hi < lo {
					return 0, fmt.Errorf("range %s goes backwards", rng)
				}
			} else if stepped {
				hi = f.max // N/S: from N on, as most crons read it
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

func value(s string, f fieldSpec) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < f.min || n > f.max {
		if f.names != nil {
			return 0, fmt.Errorf("%q is not a number from %d to %d or a name (%s, ...)", s, f.min, f.max, strings.ToUpper(f.names[0]))
		}
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, f.min, f.max)
	}
	return n, nil
}

// maxSearch bounds how far Next looks: a schedule such as "0 0 30 2 *"
// never fires.
const maxSearch = 5 * 366 * 24 * time.Hour

// Next is the first time after t, to the minute, that s fires in loc; the
// zero time when it never fires within five years. A wall-clock time
// that a daylight saving change skips does not fire that day; one that it
// repeats fires once.
func (s *Schedule) Next(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc).Truncate(time.Minute).Add(time.Minute)
	end := t.Add(maxSearch)
	for t.Before(end) {
		y, mo, d := t.Date()
		switch {
		case s.month&(1<<uint(mo)) == 0:
			t = time.Date(y, mo+1, 1, 0, 0, 0, 0, loc)
		case !s.dayMatches(t):
			t = time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
		case s.hour&(1<<uint(t.Hour())) == 0:
			next := time.Date(y, mo, d, t.Hour()+1, 0, 0, 0, loc)
			if !next.After(t) { // a repeated hour
				next = t.Truncate(time.Hour).Add(time.Hour)
			}
			t = next
		case s.minute&(1<<uint(t.Minute())) == 0:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// Latest is the last time in (after, upTo] that s fires in loc; the zero
// time when there is none. It looks back a year from upTo at most.
func (s *Schedule) Latest(after, upTo time.Time, loc *time.Location) time.Time {
	if floor := upTo.Add(-366 * 24 * time.Hour); after.Before(floor) {
		after = floor
	}
	var last time.Time
	for t := s.Next(after, loc); !t.IsZero() && !t.After(upTo); t = s.Next(t, loc) {
		last = t
	}
	return last
}
