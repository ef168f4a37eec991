package processor

import (
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
)

// Run value versions: 1 a run of this shard, 2 a run handed off by a parent
// (same fields, never pinned). The same encoding goes to the run store
// and into handoffs.
const (
	runV1        = 1
	runV1Handoff = 2
)

func appendRun(dst []byte, r *run) []byte {
	ver := byte(runV1)
	if r.handoff {
		ver = runV1Handoff
	}
	dst = append(dst, ver, byte(r.Status))
	dst = enc.AppendString(dst, r.Job.Namespace)
	dst = enc.AppendString(dst, r.Job.Name)
	dst = enc.AppendBool(dst, r.HasC)
	dst = enc.AppendVarint(dst, r.MinC)
	dst = enc.AppendVarint(dst, r.MaxC)
	dst = enc.AppendString(dst, r.pin)
	dst = enc.AppendVarint(dst, r.lastArrival)
	dst = appendRefs(dst, r.Inputs)
	dst = appendRefs(dst, r.Outputs)
	dst = appendRunVertex(dst, &r.RV)
	dst = appendCols(dst, r.Cols)
	return appendPairs(dst, r.Explicit, r.Pairs)
}

// appendPairs appends a run's explicit lineage (after its field pairs
// and their properties; a value written before it has none).
func appendPairs(dst []byte, explicit bool, pairs []semantics.PairRef) []byte {
	if !explicit {
		return dst
	}
	dst = enc.AppendBool(dst, explicit)
	dst = enc.AppendVarint(dst, int64(len(pairs)))
	for _, p := range pairs {
		dst = enc.AppendString(dst, p.In.D.Namespace)
		dst = enc.AppendString(dst, p.In.D.Name)
		dst = enc.AppendString(dst, p.Out.D.Namespace)
		dst = enc.AppendString(dst, p.Out.D.Name)
	}
	return dst
}

// readPairs reads what appendPairs wrote, if anything is left.
func readPairs(rd *enc.Reader, ids *semantics.IDs) (bool, []semantics.PairRef) {
	if !rd.OK() || rd.Len() == 0 {
		return false, nil
	}
	explicit := rd.Byte() == 1
	n := rd.Varint()
	if n < 0 || n > int64(rd.Len()) {
		failReader(rd)
		return false, nil
	}
	pairs := make([]semantics.PairRef, 0, n)
	for i := int64(0); i < n && rd.OK(); i++ {
		p := lineage.DatasetPair{In: lineage.Dataset{Namespace: rd.String(), Name: rd.String()},
			Out: lineage.Dataset{Namespace: rd.String(), Name: rd.String()}}
		pairs = append(pairs, ids.Pair(p))
	}
	return explicit, pairs
}

func appendRefs(dst []byte, set []semantics.DatasetRef) []byte {
	dst = enc.AppendVarint(dst, int64(len(set)))
	for _, d := range set {
		dst = enc.AppendString(dst, d.D.Namespace)
		dst = enc.AppendString(dst, d.D.Name)
	}
	return dst
}

// readRefs reads what appendRefs wrote (nil: rd failed).
func readRefs(rd *enc.Reader, ids *semantics.IDs) []semantics.DatasetRef {
	n := rd.Varint()
	if n < 0 || n > int64(rd.Len()) {
		failReader(rd)
		return nil
	}
	set := make([]semantics.DatasetRef, 0, n)
	for i := int64(0); i < n; i++ {
		set = append(set, ids.Ref(lineage.Dataset{Namespace: rd.String(), Name: rd.String()}))
	}
	return set
}

// decodeRun decodes the value of run id (appendRun).
func decodeRun(id string, b []byte, ids *semantics.IDs) (*run, error) {
	rd := enc.NewReader(b, checkpoint.ErrCorrupt)
	ver := rd.Byte()
	if ver != runV1 && ver != runV1Handoff {
		return nil, checkpoint.ErrCorrupt
	}
	r := &run{handoff: ver == runV1Handoff}
	r.ID, r.Status = id, semantics.Status(rd.Byte())
	if !r.Status.Valid() {
		return nil, checkpoint.ErrCorrupt
	}
	r.Job = lineage.Job{Namespace: rd.String(), Name: rd.String()}
	r.JobID = ids.Job(r.Job)
	r.HasC = rd.Byte() == 1
	r.MinC, r.MaxC = rd.Varint(), rd.Varint()
	r.pin = rd.String()
	r.lastArrival = rd.Varint()
	r.Inputs = readRefs(&rd, ids)
	r.Outputs = readRefs(&rd, ids)
	readRunVertex(&rd, &r.RV, ids)
	r.Cols = readCols(&rd, ids)
	r.Explicit, r.Pairs = readPairs(&rd, ids)
	if err := rd.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// appendRunVertex appends st to a run value (after the lineage fields; a
// value written before runs had vertices has none: see readRunVertex).
func appendRunVertex(dst []byte, st *semantics.RunVertexState) []byte {
	dst = enc.AppendBool(dst, st.HasStart)
	dst = enc.AppendVarint(dst, st.StartMin)
	dst = enc.AppendBool(dst, st.HasEnd)
	dst = enc.AppendVarint(dst, st.EndMax)
	dst = enc.AppendVarint(dst, st.TMax)
	dst = st.Props.AppendEncoded(dst) // = enc.AppendString(dst, string(props encoding))
	dst = appendRefs(dst, st.Reads)
	return appendRefs(dst, st.Writes)
}

// readRunVertex reads what appendRunVertex wrote, if anything is left.
func readRunVertex(rd *enc.Reader, st *semantics.RunVertexState, ids *semantics.IDs) {
	if !rd.OK() || rd.Len() == 0 {
		return
	}
	st.HasStart = rd.Byte() == 1
	st.StartMin = rd.Varint()
	st.HasEnd = rd.Byte() == 1
	st.EndMax = rd.Varint()
	st.TMax = rd.Varint()
	p, err := lineage.DecodeProps(rd.String())
	if err != nil {
		failReader(rd)
		return
	}
	st.Props = lineage.PropListOf(p)
	if rd.OK() {
		st.Reads = readRefs(rd, ids)
	}
	if rd.OK() {
		st.Writes = readRefs(rd, ids)
	}
}

// failReader makes rd fail (it reads past its end).
func failReader(rd *enc.Reader) {
	for rd.OK() {
		rd.Byte()
	}
}

// appendCols appends a run's field pairs to its value (after the Run
// vertex state; a value written before column lineage has none).
func appendCols(dst []byte, cols []semantics.ColRef) []byte {
	dst = enc.AppendVarint(dst, int64(len(cols)))
	for i := range cols {
		e := &cols[i].E
		dst = enc.AppendString(dst, e.In.Namespace)
		dst = enc.AppendString(dst, e.In.Name)
		dst = enc.AppendString(dst, e.InField)
		dst = enc.AppendString(dst, e.Out.Namespace)
		dst = enc.AppendString(dst, e.Out.Name)
		dst = enc.AppendString(dst, e.OutField)
	}
	// The pairs' properties, in the same order (absent in values written
	// before them: every pair then has none).
	for i := range cols {
		dst = enc.AppendString(dst, string(cols[i].Props))
	}
	return dst
}

// readCols reads what appendCols wrote, if anything is left.
func readCols(rd *enc.Reader, ids *semantics.IDs) []semantics.ColRef {
	if !rd.OK() || rd.Len() == 0 {
		return nil
	}
	n := rd.Varint()
	if n < 0 || n > int64(rd.Len()) {
		failReader(rd)
		return nil
	}
	cols := make([]semantics.ColRef, 0, n)
	for i := int64(0); i < n && rd.OK(); i++ {
		e := lineage.FieldEdge{In: lineage.Dataset{Namespace: rd.String(), Name: rd.String()}, InField: rd.String(),
			Out: lineage.Dataset{Namespace: rd.String(), Name: rd.String()}, OutField: rd.String()}
		cols = append(cols, ids.Col(e, 0))
	}
	if rd.OK() && rd.Len() > 0 {
		for i := range cols {
			p, err := lineage.DecodeProps(rd.String())
			if err != nil {
				failReader(rd)
				return nil
			}
			cols[i].Props = p
		}
	}
	return cols
}
