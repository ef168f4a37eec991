// Shared helpers of the kinesalite and dynalite wrappers: argument parsing
// and a graceful stop on SIGTERM/SIGINT (close the HTTP server and the
// LevelDB store, then exit; a bounded wait so open connections can't hold
// the process).
'use strict'

const minimist = require('minimist')

function parseArgs (defaults) {
  const argv = minimist(process.argv.slice(2))
  const out = Object.assign({}, defaults)
  for (const k of Object.keys(argv)) {
    if (k === '_') continue
    out[k] = argv[k]
  }
  return out
}

function serve (name, server, port, host) {
  // kinesalite rethrows the error of a request its client aborted
  // mid-body (`req.on('error', function (err) { throw err })`), which would
  // kill the stand-in whenever a client is killed or cancels a call at the
  // wrong moment (a SIGKILLed worker, a cancelled context). The service it
  // stands in for survives that: log it and go on. Anything else still
  // crashes the process.
  process.on('uncaughtException', (err) => {
    if (err && err.code === 'ECONNRESET' && err.message === 'aborted') {
      console.error('%s: a client aborted its request (ignored)', name)
      return
    }
    console.error('%s: %s', name, (err && err.stack) || err)
    process.exit(1)
  })
  server.on('error', (err) => {
    console.error('%s: %s', name, err.stack || err)
    process.exit(1)
  })
  server.listen(port, host, () => {
    const a = server.address()
    console.log('%s listening at http://%s:%s (pid %d)', name, a.address, a.port, process.pid)
  })
  let stopping = false
  const stop = (sig) => {
    if (stopping) return
    stopping = true
    console.log('%s: %s received, closing', name, sig)
    setTimeout(() => process.exit(0), 3000).unref()
    if (typeof server.closeAllConnections === 'function') setImmediate(() => server.closeAllConnections())
    server.close((err) => {
      if (err) console.error('%s: close: %s', name, err)
      process.exit(0)
    })
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

module.exports = { parseArgs, serve }
