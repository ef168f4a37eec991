package lineage

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func guardEvent(t *testing.T, record string, arrival time.Time, g Guard) (Event, bool, error) {
	t.Helper()
	var d Decoder
	var ev Event
	if err := d.Decode([]byte(record), &ev); err != nil {
		t.Fatalf("decode: %v", err)
	}
	changed, err := g.Check(&d, &ev, arrival)
	if err != nil {
		return ev, changed, err
	}
	return ev, changed, nil
}

func runRecord(when, runID, ns, name, outNS, outName string) string {
	return `{"eventType":"COMPLETE","eventTime":"` + when + `","run":{"runId":"` + runID + `"},"job":{"namespace":"` + ns +
		`","name":"` + name + `"},"outputs":[{"namespace":"` + outNS + `","name":"` + outName + `"}]}`
}

func reasonOf(t *testing.T, err error) Reason {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v is not a DecodeError", err)
	}
	return de.Reason
}

var guardArrival = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestGuardRefusesInvalidUTF8Names(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, rec string }{
		{"raw byte in a name", runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", "bad\xff")},
		{"raw byte in a namespace", runRecord("2026-01-01T00:00:00Z", "r1", "n\xfes", "j", "ns", "o")},
		{"raw byte in a run id", runRecord("2026-01-01T00:00:00Z", "r\xc3", "ns", "j", "ns", "o")},
		{"unpaired surrogate escape", runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", `bad\udcfe`)},
	} {
		_, _, err := guardEvent(t, tc.rec, guardArrival, Guard{})
		if err == nil || reasonOf(t, err) != ReasonInvalidUTF8 {
			t.Errorf("%s: got %v, want %s", tc.name, err, ReasonInvalidUTF8)
		}
	}
	// A valid surrogate pair, a valid multi-byte name and a bad byte in
	// a string that names nothing (producer) pass.
	for _, rec := range []string{
		runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", `emoji\ud83d\ude00`),
		runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", "caf\u00e9"),
		strings.Replace(runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", "o"), `{"eventType"`, "{\"producer\":\"p\xff\",\"eventType\"", 1),
	} {
		if _, _, err := guardEvent(t, rec, guardArrival, Guard{}); err != nil {
			t.Errorf("%q: %v", rec, err)
		}
	}
}

func TestGuardNormalizesNamesToNFC(t *testing.T) {
	t.Parallel()
	nfd := "cafe\u0301"
	ev, changed, err := guardEvent(t, runRecord("2026-01-01T00:00:00Z", "r1", nfd, nfd, "ns", nfd), guardArrival, Guard{})
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Error("changed = false for NFD names")
	}
	if ev.Outputs[0].Name != "caf\u00e9" || ev.Job.Name != "caf\u00e9" || ev.Job.Namespace != "caf\u00e9" {
		t.Errorf("not NFC: %+q %+q", ev.Job, ev.Outputs)
	}
	if DatasetID(ev.Outputs[0]) != DatasetID(Dataset{Namespace: "ns", Name: "caf\u00e9"}) {
		t.Error("NFD and NFC spellings give two datasets")
	}
	if _, changed, _ := guardEvent(t, runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", "caf\u00e9"), guardArrival, Guard{}); changed {
		t.Error("changed = true for NFC names")
	}
}

func TestGuardBoundsNameLength(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 600000)
	_, _, err := guardEvent(t, runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", long), guardArrival, Guard{})
	if err == nil || reasonOf(t, err) != ReasonNameTooLong {
		t.Fatalf("600,000-byte name: %v, want %s", err, ReasonNameTooLong)
	}
	var de *DecodeError
	errors.As(err, &de)
	if de.Field != "outputs[0].name" {
		t.Errorf("field %q, want outputs[0].name", de.Field)
	}
	at := strings.Repeat("a", DefaultMaxNameBytes)
	if _, _, err := guardEvent(t, runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", at), guardArrival, Guard{}); err != nil {
		t.Errorf("name at the limit: %v", err)
	}
	if _, _, err := guardEvent(t, runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", at+"a"), guardArrival, Guard{}); err == nil {
		t.Error("name one byte over the limit accepted")
	}
	if _, _, err := guardEvent(t, runRecord("2026-01-01T00:00:00Z", "r1", "ns", "j", "ns", "abcdefgh"), guardArrival, Guard{MaxNameBytes: 4}); err == nil {
		t.Error("MaxNameBytes 4 let an 8-byte name pass")
	}
}

func TestGuardBoundsEventTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		when string
		ok   bool
	}{
		{"9999-12-31T23:59:59Z", false},
		{"0000-01-01T00:00:00Z", false},
		{"1969-12-31T23:59:59.999Z", false},
		{"1970-01-01T00:00:00Z", true},
		{"2026-01-02T11:59:59Z", true}, // 24 h minus 1 s ahead
		{"2026-01-02T12:00:01Z", false},
		{"2025-06-01T00:00:00Z", true},
	} {
		_, _, err := guardEvent(t, runRecord(tc.when, "r1", "ns", "j", "ns", "o"), guardArrival, Guard{})
		if tc.ok != (err == nil) {
			t.Errorf("%s: err %v, want ok=%v", tc.when, err, tc.ok)
		}
		if err != nil && reasonOf(t, err) != ReasonTimeOutOfRange {
			t.Errorf("%s: reason %s", tc.when, reasonOf(t, err))
		}
	}
	if _, _, err := guardEvent(t, runRecord("9999-12-31T23:59:59Z", "r1", "ns", "j", "ns", "o"), guardArrival, Guard{MaxFuture: -1}); err != nil {
		t.Errorf("no upper bound: %v", err)
	}
}
