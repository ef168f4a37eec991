package processor

// UnsafeBreakEarlyCheckpoint is the one value of
// [PipelineConfig.UnsafeBreak]: fault injection for the e2e fault matrix
// only. A shard then checkpoints every durably processed record at once,
// before the sink acknowledged its window and before its run committed,
// breaking invariant 4 on purpose, so that `make e2e -break
// early-checkpoint` can show the matrix catches it. Never set it in
// production.
const UnsafeBreakEarlyCheckpoint = "early-checkpoint"
