package refmodel

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lineageflow/lineageflow/lineage"
	"golang.org/x/text/unicode/norm"
)

// MaxNameBytes is lineage.DefaultMaxNameBytes, the bound of the default
// worker (lineageflow run -max-name-bytes).
const MaxNameBytes = 64 << 10

// guard applies the record rules of DESIGN.md, Lineage semantics 1
// (lineage.Guard), written again: a namespace, name or run id that is
// not valid UTF-8 or is over MaxNameBytes, or an eventTime before 1970,
// refuses the record; names are normalised to NFC. The bound on eventTimes
// after arrival is not modelled (records carry no arrival time): test
// streams date their events at most a day after they are sent.
func guard(data []byte, ev *event) error {
	if ev.time < 0 {
		return fmt.Errorf("eventTime before 1970")
	}
	var top object
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	var bad error
	check := func(raw json.RawMessage, path string) {
		if bad != nil || raw == nil {
			return
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return
		}
		if len(s) > MaxNameBytes {
			bad = fmt.Errorf("%s: name_too_long", path)
		} else if replaced(raw, s) {
			bad = fmt.Errorf("%s: invalid_utf8", path)
		}
	}
	named := func(raw json.RawMessage, path string) {
		var o object
		if json.Unmarshal(raw, &o) == nil {
			check(o["namespace"], path+".namespace")
			check(o["name"], path+".name")
		}
	}
	named(top["job"], "job")
	named(top["dataset"], "dataset")
	for _, k := range []string{"inputs", "outputs"} {
		var items []json.RawMessage
		_ = json.Unmarshal(top[k], &items)
		for i, it := range items {
			named(it, fmt.Sprintf("%s[%d]", k, i))
		}
	}
	var run object
	if json.Unmarshal(top["run"], &run) == nil {
		check(run["runId"], "run.runId")
	}
	if bad != nil {
		return bad
	}
	nfc := func(d *string) { *d = norm.NFC.String(*d) }
	nfc(&ev.job.Namespace)
	nfc(&ev.job.Name)
	nfc(&ev.dataset.Namespace)
	nfc(&ev.dataset.Name)
	nfc(&ev.parentJob.Namespace)
	nfc(&ev.parentJob.Name)
	for _, l := range [][]lineage.Dataset{ev.inputs, ev.outputs} {
		for i := range l {
			nfc(&l[i].Namespace)
			nfc(&l[i].Name)
		}
	}
	for i := range ev.aliases {
		nfc(&ev.aliases[i].of.Namespace)
		nfc(&ev.aliases[i].of.Name)
		nfc(&ev.aliases[i].alias.Namespace)
		nfc(&ev.aliases[i].alias.Name)
	}
	for i := range ev.lifecycle {
		nfc(&ev.lifecycle[i].Dataset.Namespace)
		nfc(&ev.lifecycle[i].Dataset.Name)
	}
	for i := range ev.fields {
		for _, d := range []*lineage.Dataset{&ev.fields[i].in, &ev.fields[i].out} {
			nfc(&d.Namespace)
			nfc(&d.Name)
		}
	}
	for i := range ev.facets {
		nfc(&ev.facets[i].named.Namespace)
		nfc(&ev.facets[i].named.Name)
	}
	return nil
}

// replaced reports whether decoding the JSON string literal raw into s
// replaced something with U+FFFD: s holds more of them than raw spells
// (as the character itself or as a \ufffd escape).
func replaced(raw json.RawMessage, s string) bool {
	if !utf8.Valid(raw) {
		return true
	}
	spelled := strings.Count(string(raw), "\uFFFD") + strings.Count(strings.ToLower(string(raw)), `\ufffd`)
	return strings.Count(s, "\uFFFD") > spelled
}
