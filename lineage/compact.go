package lineage

import "strconv"

// CompactVersion is the version of the compact format this package reads:
// the value of its "v" field. See docs/compact-event.md.
const CompactVersion = 1

// finishCompact validates a compact event (docs/compact-event.md) and fills
// ev. Errors are reported in field order: v, type, time, run, job, in, out,
// parent, producer.
func (d *Decoder) finishCompact(ev *Event) error {
	t := &d.t
	if err := compactVersion(t.v.c, t.v.raw); err != nil {
		return err
	}
	typ, err := eventType(&t.typ, "type")
	if err != nil {
		return err
	}
	when, err := eventTime(&t.time, "time")
	if err != nil {
		return err
	}
	kind, runID := KindJob, ""
	if t.run.c != 0 || t.typ.c != 0 {
		kind = KindRun
		switch t.run.c {
		case 0:
			return errMissing("run")
		case '"':
			if t.run.str == "" {
				return errEmpty("run")
			}
			runID = t.run.str
		default:
			return errType("run", "a string", t.run.c)
		}
	}
	job, err := t.job.object("job", true)
	if err != nil {
		return err
	}
	if err := t.in.validate("in"); err != nil {
		return err
	}
	if err := t.out.validate("out"); err != nil {
		return err
	}
	var parent *ParentRun
	if kind == KindRun {
		if parent, err = t.parent.validate(true); err != nil {
			return err
		}
	}
	producer, err := t.producer.opt("producer")
	if err != nil {
		return err
	}
	*ev = Event{
		Kind: kind, Type: typ, Time: when, RunID: runID, Job: Job(job), Parent: parent,
		Inputs: append(ev.Inputs[:0], d.cin...), Outputs: append(ev.Outputs[:0], d.cout...),
		Datasets: ev.Datasets[:0], Columns: ev.Columns[:0], Aliases: ev.Aliases[:0], Lifecycle: ev.Lifecycle[:0], Facets: ev.Facets[:0], Producer: producer,
	}
	return nil
}

// compactVersion checks the "v" field: a JSON number equal to
// [CompactVersion]. c is the value's first byte, raw its text when it is a
// number.
func compactVersion(c byte, raw []byte) *DecodeError {
	if c == '"' || c == '{' || c == '[' || c == 't' || c == 'f' {
		return errType("v", "a number", c)
	}
	if len(raw) == 1 && raw[0] == '0'+CompactVersion {
		return nil
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f == CompactVersion {
		return nil
	}
	return &DecodeError{Reason: ReasonInvalidValue, Field: "v",
		Msg: "unsupported compact format version " + quoteValue(string(raw)) + ", want " + strconv.Itoa(CompactVersion)}
}
