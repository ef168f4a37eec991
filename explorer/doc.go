// Package explorer is the read side of lineageflow: `lineageflow serve`'s
// HTTP API over the lineage graph the workers write (Neptune or Gremlin
// Server), the Marquez-compatible routes under /api/v1 and the explorer's
// own under /api/lf/v1 (explorer/openapi.yaml), with a live view over
// Server-Sent Events. It only reads.
//
// Every Gremlin read is a bytecode traversal: user strings (node ids,
// search text) are parameters of steps, never script text. Every read is
// bounded: lineage walks level by level with a fan-out cap per vertex and
// a node cap, degree counts stop at CountCap, and what is left out is
// reported as "more" counts. Only INPUT_TO, OUTPUTS and DERIVES edges are
// lineage; a Run's READ and WROTE edges never appear as lineage.
//
// The web UI (package explorer/web) is mounted at / by the caller.
package explorer
