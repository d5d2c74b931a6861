// A real client process for service tests (runs as any user). argv[2] is a JSON list of steps:
//   {"call": "<GeopmClient method>", "args": [...]}  → prints {"ok":true,"value":…} or
//                                                       {"ok":false,"name":…,"message":…}
//                                   ("timed": true adds "ms", the call's time; "quiet": true
//                                    leaves the value out)
//   {"raw": {member, signature, body, interface?, path?}} → a raw call (fuzzing)
//   argv[2] may also be "@<file>" holding that JSON.
//   {"sleep": ms}, {"waitFile": path} (until it exists), {"pid": true} → prints {"ok":true,"value":<own pid>}
//   {"hold": true} → prints HOLDING and keeps the connection open until stdin closes.
//   {"together": [calls]} → sends the calls back to back without awaiting replies (races), then
//                           prints each result in order.
// The string "$PID" in arguments stands for the client's own pid, "$LAST_SERVER_PID" for the
// server pid of the last successful PlatformStartBatch.
// Doubles that JSON cannot carry are written as the strings "NaN", "Infinity", "-Infinity".
import { existsSync, readFileSync } from 'node:fs';
import { GeopmClient } from '../../dist/ipc/geopm-client.js';

let lastServerPid;
const revive = (v) =>
  v === '$PID'
    ? process.pid
    : v === '$LAST_SERVER_PID'
      ? lastServerPid
      : v === 'NaN'
        ? Number.NaN
        : v === 'Infinity'
          ? Number.POSITIVE_INFINITY
          : v === '-Infinity'
            ? -Infinity
            : v;
// {"$repeat": [text, n]} stands for text repeated n times (huge strings without huge argv),
// {"$fill": [value, n]} for an array of n copies of value, and {"$names": [prefix, n, bytes]} for
// n distinct names of `bytes` characters each ("<prefix><i>-xxx…").
const generated = (v) => {
  if (v.$repeat) return v.$repeat[0].repeat(v.$repeat[1]);
  if (v.$fill) return new Array(v.$fill[1]).fill(v.$fill[0]);
  if (v.$names) {
    const [prefix, n, bytes] = v.$names;
    return Array.from({ length: n }, (_, i) => `${prefix}${i}-`.padEnd(bytes, 'x'));
  }
  return undefined;
};
const deep = (v) =>
  Array.isArray(v)
    ? v.map(deep)
    : v !== null && typeof v === 'object'
      ? (generated(v) ?? revive(v))
      : revive(v);
const show = (v) =>
  JSON.stringify(v, (_k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x));

// "@<file>" reads the steps from a file (long step lists exceed the argv limit).
const arg = process.argv[2] ?? '[]';
const steps = JSON.parse(arg.startsWith('@') ? readFileSync(arg.slice(1), 'utf8') : arg);
const client = await GeopmClient.connect();
// Arguments are built before the call starts, so a step's "ms" times the call alone.
const prepare = (step) => {
  if (step.raw) {
    const body = deep(step.raw.body ?? []);
    return () => client.raw({ interface: 'io.github.geopm', ...step.raw, body });
  }
  const args = deep(step.args ?? []);
  return () => client[step.call](...args);
};
const callOf = (step) => prepare(step)();
let started = 0;
for (const step of steps) {
  try {
    if (step.sleep) {
      await new Promise((r) => setTimeout(r, step.sleep));
      continue;
    }
    if (step.waitFile) {
      while (!existsSync(step.waitFile)) await new Promise((r) => setTimeout(r, 20));
      continue;
    }
    if (step.pid) {
      console.log(show({ ok: true, value: process.pid }));
      continue;
    }
    if (step.hold) {
      console.log('HOLDING');
      process.stdin.resume();
      await new Promise((r) => process.stdin.on('end', r));
      break;
    }
    if (step.together) {
      const settled = await Promise.allSettled(step.together.map(callOf));
      for (const r of settled) {
        if (r.status === 'fulfilled') console.log(show({ ok: true, value: r.value ?? null }));
        else
          console.log(
            show({ ok: false, name: r.reason.dbusName ?? r.reason.name, message: r.reason.message }),
          );
      }
      continue;
    }
    const run = prepare(step);
    started = performance.now();
    const value = await run();
    const ms = performance.now() - started;
    if (value && typeof value === 'object' && 'serverPid' in value) lastServerPid = value.serverPid;
    console.log(
      show({ ok: true, value: step.quiet ? null : (value ?? null), ...(step.timed ? { ms } : {}) }),
    );
  } catch (err) {
    const ms = performance.now() - started;
    const timing = step.timed ? { ms } : {};
    console.log(show({ ok: false, name: err.dbusName ?? err.name, message: err.message, ...timing }));
  }
}
client.close();
