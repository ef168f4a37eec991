#!/usr/bin/env node
// DynamoDB stand-in (KCL lease and checkpoint table): dynalite bound to one
// host.
//
//   node dynalite.js --port 4568 [--host 127.0.0.1] [--path DIR]
//        [--createTableMs 50] [--deleteTableMs 50] [--updateTableMs 50]
//
// With --path the tables live in LevelDB under DIR, so KCL leases and
// checkpoints survive a restart of the stand-in, like the real service.
// Without --path everything is in memory.
'use strict'

const { parseArgs, serve } = require('./lib')

const opts = parseArgs({
  host: '127.0.0.1',
  port: 4568,
  createTableMs: 50,
  deleteTableMs: 50,
  updateTableMs: 50
})
const server = require('dynalite')({
  path: opts.path || undefined,
  createTableMs: Number(opts.createTableMs),
  deleteTableMs: Number(opts.deleteTableMs),
  updateTableMs: Number(opts.updateTableMs)
})
serve('dynalite', server, Number(opts.port), String(opts.host))
