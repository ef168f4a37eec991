package lineage

import "fmt"

// Reason classifies why a record was refused. Reasons are stable strings:
// they label dead letters and the lineage_invalid_records_total metric.
type Reason string

const (
	ReasonNotJSON          Reason = "not_json"           // not parseable JSON at all
	ReasonOversized        Reason = "oversized"          // larger than the decoder's MaxBytes
	ReasonMissingField     Reason = "missing_field"      // a required field is absent or empty
	ReasonWrongType        Reason = "wrong_type"         // a field has the wrong JSON type
	ReasonUnknownEventType Reason = "unknown_event_type" // eventType not in the spec's enum
	ReasonInvalidValue     Reason = "invalid_value"      // right type, bad value (e.g. unparseable eventTime)
	ReasonUnknownFormat    Reason = "unknown_format"     // JSON, but neither OpenLineage nor compact
	ReasonKPLCorrupt       Reason = "kpl_corrupt"        // a KPL aggregate (magic, valid MD5) whose protobuf does not decode
	ReasonTooManyDatasets  Reason = "too_many_datasets"  // more inputs + outputs than the processor's per-event budget
)

// DecodeError says what is wrong with a record and names the field.
type DecodeError struct {
	Reason Reason
	Field  string // JSON path of the offending field, e.g. "run.runId"; empty when the whole record is at fault
	Msg    string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("lineage: %s (%s)", e.Msg, e.Reason)
	}
	return fmt.Sprintf("lineage: %s: %s (%s)", e.Field, e.Msg, e.Reason)
}
