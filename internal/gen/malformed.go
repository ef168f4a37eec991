package gen

import (
	"bytes"
	"fmt"
)

// malformed produces the next malformed record. Its base is a COMPLETE
// event of a fresh run of a real job that reads and writes quarantine
// datasets: if any of it leaks into the graph, it shows.
func (g *generator) malformed() Record {
	slot := g.nMal % (len(MalformedKinds) + 1)
	g.nMal++
	if slot == len(MalformedKinds) {
		return g.wideEvent()
	}
	kind := MalformedKinds[slot]
	pl := g.pickPipeline()
	jd := pick(g.r, pl.jobs)
	app := &runRef{id: g.uuid(), ns: pl.ns, name: pl.app, pl: pl}
	run := &runRef{id: g.uuid(), ns: jd.ns, name: jd.name, pl: pl, job: jd, parent: app}
	q := g.w.quarant
	p := planned{typ: "COMPLETE", run: run, inputs: q[:2], outputs: q[2:], stats: true}
	rec := Record{PartitionKey: "run:" + pl.ns + "/" + pl.app, Malformed: kind}
	eventTime := g.formatTime(g.nextTime())
	ev := g.runEventStruct(p, eventTime)
	quote := func(s string) string { return string(mustJSON(s)) }
	switch kind {
	case MalformedNotJSON:
		switch g.r.IntN(4) {
		case 0:
			rec.Data = []byte(`<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>`)
		case 1:
			rec.Data = []byte("eventType=COMPLETE&runId=" + run.id + "&job=" + pl.app)
		case 2:
			rec.Data = []byte(fmt.Sprintf("{'eventType': 'COMPLETE', 'eventTime': '%s', 'run': {'runId': '%s'}, 'job': {'namespace': '%s', 'name': '%s'}}",
				eventTime, run.id, pl.ns, pl.app))
		default:
			b := []byte{0x1f, 0x8b, 0x08, 0x00}
			for i := 0; i < 200+g.r.IntN(300); i++ {
				c := byte(g.r.IntN(256))
				if c == '\n' || c == '\r' {
					c = 0x00
				}
				b = append(b, c)
			}
			rec.Data = b
		}
	case MalformedMissingRunID:
		data := mustJSON(ev)
		if g.r.IntN(2) == 0 {
			rec.Data = bytes.Replace(data, []byte(`"runId":`+quote(run.id)+`,`), nil, 1)
		} else {
			rec.Data = bytes.Replace(data, []byte(`"runId":`+quote(run.id)), []byte(`"runId":""`), 1)
		}
	case MalformedWrongType:
		var from, to string
		switch g.r.IntN(5) {
		case 0:
			from, to = `"runId":`+quote(run.id), `"runId":12345`
		case 1:
			from, to = `"eventTime":`+quote(eventTime), fmt.Sprintf(`"eventTime":%d`, g.base.UnixMilli())
		case 2:
			ev.Inputs = nil
			from, to = `"inputs":null`, `"inputs":{"namespace":`+quote(q[0].ns)+`,"name":`+quote(q[0].name)+`}`
		case 3:
			from, to = `"job":{"namespace":`+quote(jd.ns)+`,"name":`+quote(jd.name), `"job":{"namespace":`+quote(jd.ns)+`,"name":42`
		default:
			ev.Outputs = nil
			from, to = `"outputs":null`, `"outputs":[`+quote(q[2].ns+"/"+q[2].name)+`]`
		}
		data := mustJSON(ev)
		rec.Data = bytes.Replace(data, []byte(from), []byte(to), 1)
		if bytes.Equal(rec.Data, data) {
			panic("gen: wrong_type replacement did not apply: " + from)
		}
	case MalformedUnknownEventType:
		ev.EventType = pick(g.r, []string{"SUCCEEDED", "FINISHED", "RUN_COMPLETE", "CANCELLED"})
		rec.Data = mustJSON(ev)
	case MalformedTruncated:
		data := mustJSON(ev)
		rec.Data = data[:len(data)/3+g.r.IntN(len(data)*2/3-1)]
	case MalformedBadTime:
		ev.EventTime = pick(g.r, []string{"not-a-time", "2026-13-45T25:61:00Z", "01/02/2026 10:00:00", "1767225600"})
		rec.Data = mustJSON(ev)
	default:
		panic("gen: unknown malformed kind " + kind)
	}
	return rec
}

// wideEvent produces a valid COMPLETE event of a fresh run of a real job,
// WideBytes + 1..4 KiB, most of it the schema facet of its output: the
// shape of a Spark event over a wide table.
func (g *generator) wideEvent() Record {
	pl := g.pickPipeline()
	jd := pick(g.r, pl.jobs)
	app := &runRef{id: g.uuid(), ns: pl.ns, name: pl.app, pl: pl}
	run := &runRef{id: g.uuid(), ns: jd.ns, name: jd.name, pl: pl, job: jd, parent: app}
	in := &dataset{ns: "s3://datalake-wide", name: fmt.Sprintf("raw/wide_%d", g.nMal), fields: newFields(g.r), source: "s3"}
	out := &dataset{ns: "s3://datalake-wide", name: fmt.Sprintf("marts/wide_%d", g.nMal), fields: newFields(g.r), source: "s3"}
	p := planned{typ: "COMPLETE", run: run, inputs: []*dataset{in}, outputs: []*dataset{out}, stats: true}
	rec := Record{PartitionKey: "run:" + pl.ns + "/" + pl.app, Wide: true}
	eventTime := g.formatTime(g.nextTime())
	target := WideBytes + 1 + g.r.IntN(4<<10)
	for {
		data := mustJSON(g.runEventStruct(p, eventTime))
		if len(data) > target {
			rec.Data = data
			return rec
		}
		for n := (target-len(data))/48 + 1; n > 0; n-- {
			out.fields = append(out.fields, field{Name: fmt.Sprintf("wide_col_%06d", len(out.fields)), Type: pick(g.r, columnTypes)})
		}
	}
}
