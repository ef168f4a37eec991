package processor

import "os"

// breakEarlyCheckpoint is fault injection for the e2e fault matrix only:
// with LINEAGEFLOW_UNSAFE_BREAK=early-checkpoint in its environment, a
// worker checkpoints every durably processed record at once, before the
// sink acknowledged its window and before its run committed, breaking
// invariant 4 on purpose, so that `make e2e -break early-checkpoint` can
// show the matrix catches it. Never set it in production.
var breakEarlyCheckpoint = os.Getenv("LINEAGEFLOW_UNSAFE_BREAK") == "early-checkpoint"
