// Builds the explorer UI into dist/ (or the directory given as the first
// argument): dist/index.html, dist/assets/app.js, dist/assets/boot.js (starts
// reading the view's lineage while app.js loads), dist/assets/app.css and
// dist/build-info.json. The output is byte-for-byte reproducible from the
// lockfile: no hashes in names, no timestamps, no source maps with absolute
// paths. build-info.json records a SHA-256 of every input so that a Go test
// (without npm) can tell when a source changed and dist/ was not rebuilt.
import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ? process.argv[2] : join(here, 'dist');

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

await esbuild.build({
  absWorkingDir: here,
  entryPoints: ['src/app.ts'],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'eof',
  charset: 'utf8',
  outfile: join(out, 'assets', 'app.js'),
  logLevel: 'warning',
});
await esbuild.build({
  absWorkingDir: here,
  entryPoints: ['src/boot.ts'],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'eof',
  charset: 'utf8',
  outfile: join(out, 'assets', 'boot.js'),
  logLevel: 'warning',
});
await esbuild.build({
  absWorkingDir: here,
  entryPoints: ['src/app.css'],
  bundle: true,
  minify: true,
  charset: 'utf8',
  outfile: join(out, 'assets', 'app.css'),
  logLevel: 'warning',
});
copyFileSync(join(here, 'src', 'index.html'), join(out, 'index.html'));

// Inputs, sorted, hashed: the same list as inputFiles in web_test.go.
const inputs = ['build.mjs', 'package.json', 'package-lock.json'];
for (const f of readdirSync(join(here, 'src')).sort()) inputs.push('src/' + f);
const info = { inputs: {} };
for (const f of inputs) {
  info.inputs[f] = createHash('sha256').update(readFileSync(join(here, f))).digest('hex');
}
writeFileSync(join(out, 'build-info.json'), JSON.stringify(info, null, 2) + '\n');
