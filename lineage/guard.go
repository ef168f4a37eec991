package lineage

import (
	"fmt"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Reasons of the guard (see [Guard]).
const (
	ReasonInvalidUTF8     Reason = "invalid_utf8"            // a name, namespace or run id is not valid UTF-8
	ReasonNameTooLong     Reason = "name_too_long"           // a name, namespace or run id is over Guard.MaxNameBytes
	ReasonTimeOutOfRange  Reason = "event_time_out_of_range" // eventTime before 1970 or too far after arrival
	ReasonRunJobMismatch  Reason = "run_job_mismatch"        // a RunEvent names another job than its run's (semantics)
	ReasonParkedByGraph   Reason = "parked"                  // a write the graph refused for this item alone (processor)
	DefaultMaxNameBytes          = 64 << 10
	DefaultMaxEventFuture        = 24 * time.Hour
)

// Guard bounds what a decoded event may name, so that one hostile or
// broken producer cannot sink the writes of others (DESIGN.md, Lineage
// semantics 1):
//
//   - every namespace, name and run id is valid UTF-8 (else
//     [ReasonInvalidUTF8]: decoding replaced the bad bytes, so "bad\xff"
//     and "bad\xfe" would be one dataset);
//   - each is at most MaxNameBytes (else [ReasonNameTooLong]: a vertex
//     record holds its id and name twice, and a write request over the
//     Gremlin client's 1 MiB buffer is refused as a whole);
//   - eventTime is not before 1970-01-01 nor more than MaxFuture after
//     the record's arrival (else [ReasonTimeOutOfRange]: the last writer
//     by eventTime wins, so a 9999 event would fix properties for ever);
//   - names and namespaces are normalised to Unicode NFC (café written
//     with a combining accent and with é is one dataset); Check reports
//     whether it changed any.
//
// The zero Guard uses the defaults.
type Guard struct {
	MaxNameBytes int           // 0: DefaultMaxNameBytes
	MaxFuture    time.Duration // 0: DefaultMaxEventFuture; < 0: no upper bound
}

// Check applies the guard to ev, decoded by d, which arrived at arrival.
// It normalises ev's names in place and reports whether any changed;
// a refusal is a *DecodeError naming the field.
func (g Guard) Check(d *Decoder, ev *Event, arrival time.Time) (normalized bool, err *DecodeError) {
	if d != nil && d.InvalidUTF8() {
		return false, &DecodeError{Reason: ReasonInvalidUTF8, Field: badField(ev),
			Msg: "a namespace, name or run id is not valid UTF-8"}
	}
	if err := g.checkTime(ev.Time, arrival); err != nil {
		return false, err
	}
	max := g.MaxNameBytes
	if max <= 0 {
		max = DefaultMaxNameBytes
	}
	w := walker{max: max}
	w.str(&ev.RunID, "run.runId", false)
	w.named(&ev.Job.Namespace, &ev.Job.Name, "job")
	w.named(&ev.KeyJob.Namespace, &ev.KeyJob.Name, "run.facets.parent.root.job")
	if ev.Parent != nil {
		w.str(&ev.Parent.RunID, "run.facets.parent.run.runId", false)
		w.named(&ev.Parent.Job.Namespace, &ev.Parent.Job.Name, "run.facets.parent.job")
	}
	w.list(ev.Inputs, "inputs")
	w.list(ev.Outputs, "outputs")
	w.list(ev.Datasets, "dataset")
	for i := range ev.Columns {
		w.named(&ev.Columns[i].Output.Namespace, &ev.Columns[i].Output.Name, "outputs")
	}
	for i := range ev.Aliases {
		a := &ev.Aliases[i]
		w.named(&a.Of.Namespace, &a.Of.Name, "symlinks")
		w.named(&a.Alias.Namespace, &a.Alias.Name, "symlinks.identifiers")
	}
	for i := range ev.Lifecycle {
		w.named(&ev.Lifecycle[i].Dataset.Namespace, &ev.Lifecycle[i].Dataset.Name, "outputs")
	}
	for i := range ev.Facets {
		w.named(&ev.Facets[i].Namespace, &ev.Facets[i].Name, "facets")
	}
	return w.changed, w.err
}

// checkTime is the eventTime bound of Check.
func (g Guard) checkTime(t, arrival time.Time) *DecodeError {
	if t.Before(time.Unix(0, 0)) {
		return &DecodeError{Reason: ReasonTimeOutOfRange, Field: "eventTime",
			Msg: fmt.Sprintf("%s is before 1970-01-01T00:00:00Z", t.UTC().Format(time.RFC3339Nano))}
	}
	future := g.MaxFuture
	if future == 0 {
		future = DefaultMaxEventFuture
	}
	if future > 0 && !arrival.IsZero() && t.After(arrival.Add(future)) {
		return &DecodeError{Reason: ReasonTimeOutOfRange, Field: "eventTime",
			Msg: fmt.Sprintf("%s is more than %s after the record's arrival (%s)", t.UTC().Format(time.RFC3339Nano),
				future, arrival.UTC().Format(time.RFC3339))}
	}
	return nil
}

// walker bounds and normalises the strings of one event.
type walker struct {
	max     int
	changed bool
	err     *DecodeError
}

func (w *walker) named(ns, name *string, path string) {
	w.str(ns, path+".namespace", true)
	w.str(name, path+".name", true)
}

func (w *walker) list(ds []Dataset, path string) {
	for i := range ds {
		w.named(&ds[i].Namespace, &ds[i].Name, fmt.Sprintf("%s[%d]", path, i))
	}
}

func (w *walker) str(s *string, path string, nfc bool) {
	if w.err != nil {
		return
	}
	if len(*s) > w.max {
		w.err = &DecodeError{Reason: ReasonNameTooLong, Field: path,
			Msg: fmt.Sprintf("is %d bytes, over the %d-byte limit (-max-name-bytes)", len(*s), w.max)}
		return
	}
	if !nfc || ascii(*s) {
		return
	}
	if n := norm.NFC.String(*s); n != *s {
		*s, w.changed = n, true
	}
}

// ascii reports whether s is all ASCII (then valid UTF-8 and NFC).
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// NormalizeName is the name rule of [Guard] for one string: NFC.
func NormalizeName(s string) string {
	if ascii(s) {
		return s
	}
	return norm.NFC.String(s)
}

// badField names the first field of ev holding U+FFFD (where decoding
// replaced a bad byte), "" when none does (the replacement was in a
// string the event does not keep).
func badField(ev *Event) string {
	has := func(s string) bool {
		for _, r := range s {
			if r == utf8.RuneError {
				return true
			}
		}
		return false
	}
	switch {
	case has(ev.RunID):
		return "run.runId"
	case has(ev.Job.Namespace) || has(ev.Job.Name):
		return "job"
	}
	for _, l := range []struct {
		p  string
		ds []Dataset
	}{{"inputs", ev.Inputs}, {"outputs", ev.Outputs}, {"dataset", ev.Datasets}} {
		for i, d := range l.ds {
			if has(d.Namespace) || has(d.Name) {
				return fmt.Sprintf("%s[%d]", l.p, i)
			}
		}
	}
	return ""
}

// invalidText reports whether the raw JSON string contents (flags fl, as
// scanner.str gave them) unescape to something else than they say:
// invalid UTF-8 bytes or an escaped unpaired surrogate, which unquote
// replaces with U+FFFD.
func invalidText(raw []byte, fl uint8) bool {
	if fl&flHigh != 0 && !utf8.Valid(raw) {
		return true
	}
	if fl&flEsc == 0 {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++
			continue
		}
		r := getu4(raw[i:])
		i += 5
		if !utf16.IsSurrogate(r) {
			continue
		}
		r1 := getu4(raw[i+1:])
		if utf16.DecodeRune(r, r1) == utf8.RuneError {
			return true
		}
		i += 6
	}
	return false
}
