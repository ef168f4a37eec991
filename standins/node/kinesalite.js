#!/usr/bin/env node
// Kinesis stand-in: kinesalite bound to one host (its CLI binds all
// interfaces and has no host flag).
//
//   node kinesalite.js --port 4567 [--host 127.0.0.1] [--path DIR]
//        [--shardLimit 200] [--createStreamMs 50] [--deleteStreamMs 50]
//        [--updateStreamMs 50]
//
// With --path the streams and records live in LevelDB under DIR and survive
// a restart (and memory stays small: in-memory kinesalite grows to ~1 GB
// after ~700k records). Without --path everything is in memory.
'use strict'

const { parseArgs, serve } = require('./lib')

const opts = parseArgs({
  host: '127.0.0.1',
  port: 4567,
  shardLimit: 200,
  createStreamMs: 50,
  deleteStreamMs: 50,
  updateStreamMs: 50
})
// kinesalite answers application/x-amz-cbor-1.1 requests with
// cbor.Encoder.encodeOne, which (cbor 5.2.0 on Node >= 14) returns only what
// its internal stream buffered below the 16 KiB highWaterMark: any CBOR
// response larger than that (a GetRecords of more than a few records) is
// cut short, with a Content-Length that matches the cut body. Kinesis sends
// whole bodies; give the encoder a high-water mark no response reaches.
const cbor = require('cbor')
const encodeOne = cbor.Encoder.encodeOne
cbor.Encoder.encodeOne = (obj, options) =>
  encodeOne.call(cbor.Encoder, obj, Object.assign({ highWaterMark: 256 << 20 }, options))

const server = require('kinesalite')({
  path: opts.path || undefined,
  shardLimit: Number(opts.shardLimit),
  createStreamMs: Number(opts.createStreamMs),
  deleteStreamMs: Number(opts.deleteStreamMs),
  updateStreamMs: Number(opts.updateStreamMs)
})
serve('kinesalite', server, Number(opts.port), String(opts.host))
