// Floor for the batch benchmark's CPU per sample, in Node.js: what the loop of bench/c/floor_server.c
// costs when written the plainest way in JavaScript — blocking fs.readSync/writeSync on the same
// FIFOs, one fs.readSync at offset 0 per file kept open, integers parsed from the bytes, no
// PlatformIO. It shows how much of joulegate's server cost is Node's own per-message cost.
// Usage: node node_floor_server.mjs RUN_DIR KEY FILE...   (prints "ready" once the files exist)
import { execFileSync } from 'node:child_process';
import { closeSync, ftruncateSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';

const HEADER_BYTES = 64;
const [run, key, ...paths] = process.argv.slice(2);
if (!run || !key || paths.length === 0) {
  process.stderr.write('usage: node_floor_server.mjs RUN_DIR KEY FILE...\n');
  process.exit(2);
}
const files = paths.map((p) => openSync(p, 'r'));
const bufferPath = `${run}/batch-buffer-${key}-signal`;
const inPath = `${run}/batch-status-${key}-in`;
const outPath = `${run}/batch-status-${key}-out`;
const bufferFd = openSync(bufferPath, 'wx', 0o600);
ftruncateSync(bufferFd, HEADER_BYTES + 8 * files.length);
closeSync(bufferFd);
execFileSync('mkfifo', ['-m', '600', inPath, outPath]);
process.stdout.write('ready\n');

const outFd = openSync(outPath, 'w');
const inFd = openSync(inPath, 'r');
for (const p of [outPath, inPath, bufferPath]) unlinkSync(p);

const message = Buffer.alloc(1);
const text = Buffer.alloc(64);
const CONTINUE = Buffer.from('c');
const QUIT = Buffer.from('q');
// Values are parsed as the C floor does (kHz → Hz) but kept here: the buffer is not mapped, so
// the client's value check is not made against this server.
const values = new Float64Array(files.length);
while (readSync(inFd, message, 0, 1, null) === 1) {
  if (message[0] !== 0x72 /* 'r' */) {
    if (message[0] === 0x71 /* 'q' */) writeSync(outFd, QUIT);
    break;
  }
  for (let i = 0; i < files.length; i++) {
    const got = readSync(files[i], text, 0, text.length, 0);
    let khz = 0;
    let digits = 0;
    for (; digits < got; digits++) {
      const d = text[digits] - 48;
      if (d < 0 || d > 9) break;
      khz = khz * 10 + d;
    }
    values[i] = digits === 0 ? Number.NaN : khz * 1e3;
  }
  writeSync(outFd, CONTINUE);
}
