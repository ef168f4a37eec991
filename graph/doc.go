// Package graph is the one Gremlin client of lineageflow, for the writers
// (package sink) and the readers (the explorer, `lineageflow verify` and
// `lineageflow diff`, tests and tools): every connection to Neptune or
// Gremlin Server is opened here, so all of them reach an endpoint the same
// way.
//
// It owns:
//   - [Config] and [Dialer]: gremlin-go connections with TLS for wss://,
//     Neptune IAM database authentication (a SigV4 signature of the
//     websocket handshake, re-signed on every reconnect; sigv4.go), the
//     dial timeout, the write buffer and gremlin-go's logs routed to slog
//     (config.go, dial.go);
//   - the error classes of a failed Gremlin request, [Code] and [Classify]
//     (errors.go): what Neptune or Gremlin Server answered, or that no
//     answer came. What to do about each class (retry, reconnect, give up)
//     is the caller's policy (see sink/retry.go);
//   - read helpers (read.go): [Snapshot] of a whole graph as plain values
//     ([Dialer.Dump], [Dump]), [Drop] for tests, [Connect] for a quiet
//     traversal source, [AsInt64] for numbers as GraphBinary returns them.
//
// The names of the graph's labels and properties are not here: they are
// the vocabulary of package lineage.
//
// It must not import sink, explorer, processor or any other package of this
// module: besides the standard library it imports only gremlin-go and the
// AWS SDK (credentials and SigV4 signing). imports_test.go checks it.
package graph
