// Startup script of the Gremlin Server stand-in: binds the traversal source
// "g" (the name Neptune and gremlin-go use) over the graph "graph" that
// gremlin-server.yaml defines.
def globals = [:]

globals << [hook : [
  onStartUp: { ctx ->
    ctx.logger.info("lineageflow stand-in: graph ready (in memory, string ids, set cardinality)")
  },
  onShutDown: { ctx ->
    ctx.logger.info("lineageflow stand-in: shutting down")
  }
] as LifeCycleHook]

globals << [g : traversal().withEmbedded(graph)]
