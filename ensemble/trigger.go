package ensemble

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // a trigger's timezone loads on hosts without a zone database

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/cron"
)

// Trigger is one item of triggers:, what starts runs of the file without a
// caller when `ensemble serve` serves it (docs/format.md#triggers): a cron
// schedule or a webhook. Exactly one of Cron and Webhook is set.
type Trigger struct {
	Pos Pos
	// Key names the trigger among the file's, stably across edits of its
	// input: "cron SPEC TIMEZONE" or "webhook PATH".
	Key  string
	Cron *CronTrigger
	Hook *WebhookTrigger
}

// sameSchedule returns the place in ts of the trigger whose cron
// schedule fires whenever t's does, in the same time zone, though written
// otherwise ("1-5" and "MON-FRI"): two runs a fire would be one too many;
// -1 when none does.
func sameSchedule(ts []*Trigger, t *Trigger) int {
	if t.Cron == nil || t.Cron.Schedule == nil {
		return -1
	}
	for i, o := range ts {
		if o.Cron != nil && o.Cron.Schedule != nil && o.Cron.Timezone == t.Cron.Timezone && o.Cron.Schedule.Same(t.Cron.Schedule) {
			return i
		}
	}
	return -1
}

// CronTrigger starts a run each time its schedule fires.
type CronTrigger struct {
	Spec     string
	Schedule *Schedule
	Timezone string // "UTC" when the file names none
	Location *time.Location
	// Input is the run's input; nil: the file's input.
	Input *string
}

// WebhookTrigger starts a run for each signed POST to its path on serve.
type WebhookTrigger struct {
	Path string // /hooks/...
	// SecretEnv names the variable holding the HMAC secret.
	SecretEnv string
	// Input renders the run's input from the request (body, headers);
	// nil: the request's body as it is.
	Input RequestTemplate
}

var (
	triggerKeys     = []string{"cron", "timezone", "input", "webhook"}
	webhookKeys     = []string{"path", "secret_env", "input"}
	hookPathPattern = regexp.MustCompile(`^/hooks(/[A-Za-z0-9._~-]+)+$`)
)

// triggers decodes triggers:.
func (d *decoder) triggers(f field) []*Trigger {
	var out []*Trigger
	var places []int // each trigger of out's number in the file
	seen := map[string]int{}
	for i, n := range d.list(f) {
		where := fmt.Sprintf("trigger #%d", i+1)
		m := d.mapping(n, where, triggerKeys...)
		if m == nil {
			continue
		}
		t := &Trigger{Pos: pos(n)}
		c, w := m.get("cron"), m.get("webhook")
		switch {
		case c.ok() && w.ok():
			d.errorf(w.key, "%s: give cron or webhook, not both", where)
			continue
		case c.ok():
			t.Cron = d.cronTrigger(m, c)
			if t.Cron == nil {
				continue
			}
			t.Key = "cron " + t.Cron.Spec + " " + t.Cron.Timezone
		case w.ok():
			for _, k := range []string{"timezone", "input"} {
				if fd := m.get(k); fd.ok() {
					d.errorf(fd.key, "%s: %s belongs to a cron trigger; a webhook's input goes under webhook:", where, k)
				}
			}
			t.Hook = d.webhookTrigger(w, where)
			if t.Hook == nil {
				continue
			}
			t.Key = "webhook " + t.Hook.Path
		default:
			d.errorf(n, "%s: cron or webhook is required", where)
			continue
		}
		if first, ok := seen[t.Key]; ok {
			d.errorf(n, "%s repeats trigger #%d (%s)", where, first, t.Key)
			continue
		}
		if j := sameSchedule(out, t); j >= 0 {
			d.errorf(n, "%s repeats trigger #%d: %s fires when it does", where, places[j], t.Key)
			continue
		}
		seen[t.Key] = i + 1
		out, places = append(out, t), append(places, i+1)
	}
	return out
}

func (d *decoder) cronTrigger(m fields, c field) *CronTrigger {
	ct := &CronTrigger{Spec: strings.Join(strings.Fields(d.str(c)), " "), Timezone: "UTC"}
	if resolve(c.val).Kind != yaml.ScalarNode {
		return nil // reported by str
	}
	ok := true
	s, err := cron.Parse(ct.Spec)
	if err != nil {
		d.bad(c, "%v", err)
		ok = false // the time zone is checked too
	}
	ct.Schedule = s
	if tz := m.get("timezone"); tz.ok() {
		ct.Timezone = d.str(tz)
		loc, err := time.LoadLocation(ct.Timezone)
		switch {
		case ct.Timezone == "" || ct.Timezone == "Local":
			d.bad(tz, "must name a time zone of the IANA database, as Europe/Berlin or UTC")
			ok = false
		case err != nil:
			d.bad(tz, "%q is not a time zone of the IANA database (as Europe/Berlin or UTC)", ct.Timezone)
			ok = false
		default:
			ct.Location = loc
		}
	} else {
		ct.Location = time.UTC
	}
	if in := m.get("input"); in.ok() {
		s := d.str(in)
		ct.Input = &s
	}
	if !ok {
		return nil
	}
	return ct
}

func (d *decoder) webhookTrigger(w field, where string) *WebhookTrigger {
	hw := where + " webhook"
	m := d.mapping(w.val, hw, webhookKeys...)
	if m == nil {
		return nil
	}
	h := &WebhookTrigger{}
	ok := true
	p := m.get("path")
	h.Path = d.str(p)
	d.need(p, h.Path == "")
	if p.ok() && h.Path != "" && (!hookPathPattern.MatchString(h.Path) || strings.Contains(h.Path, "/../") || strings.HasSuffix(h.Path, "/..") || strings.Contains(h.Path, "/./")) {
		d.bad(p, "%q must be a path under /hooks/, as /hooks/pr: segments of letters, digits, '.', '_', '~' and '-'", h.Path)
		ok = false
	}
	se := m.get("secret_env")
	h.SecretEnv = d.str(se)
	d.need(se, h.SecretEnv == "")
	if se.ok() && h.SecretEnv != "" && !envNamePattern.MatchString(h.SecretEnv) {
		d.bad(se, "%q is not a variable name: name the variable holding the secret, as GITHUB_HOOK_SECRET", h.SecretEnv)
		ok = false
	}
	if in := m.get("input"); in.ok() {
		src := d.str(in)
		if resolve(in.val).Kind != yaml.ScalarNode {
			return nil // reported by str
		}
		t, err := conditions.CompileRequestTemplate(src)
		if err != nil {
			line, col := in.val.Line, in.val.Column
			if ce, _ := err.(*conditions.CompileError); ce != nil && ce.Line > 0 {
				line, col = d.inTemplate(in.val, ce.Line, ce.Column)
			}
			d.errorAt(line, col, "%s does not compile: %v (a webhook's input reads body and headers)", in.label(), err)
			return nil
		}
		h.Input = t
	}
	if !ok || !p.ok() || !se.ok() || h.Path == "" || h.SecretEnv == "" {
		return nil
	}
	return h
}
