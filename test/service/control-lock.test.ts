import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { PlatformIO } from '../../src/platform/platform-io.js';
import { CONTROL_LOCK, ControlLock } from '../../src/service/control-lock.js';

/** The two calls ControlLock makes of the platform: a save that leaves a file, a restore that counts. */
function fakePlatform() {
  const calls = { saved: 0, restored: 0 };
  const pio = {
    async saveControls(dir: string) {
      calls.saved++;
      writeFileSync(join(dir, 'saved'), 'x', { mode: 0o600 });
    },
    async restoreControls() {
      calls.restored++;
    },
  } as unknown as PlatformIO;
  return { pio, calls };
}

const runDir = () => mkdtempSync(join(tmpdir(), 'jg-control-lock-'));

test('control lock: the holder follows acquire and release, and CONTROL_LOCK on disk says the same', async () => {
  const dir = runDir();
  try {
    const { pio, calls } = fakePlatform();
    const lock = new ControlLock(dir, pio, () => {});
    assert.equal(lock.holder(), undefined);
    assert.equal(await lock.acquire(4242, 4242), true);
    assert.equal(calls.saved, 1);
    assert.equal(lock.holder(), 4242);
    assert.equal(readFileSync(join(dir, CONTROL_LOCK), 'utf8'), '4242\n');
    assert.equal(await lock.acquire(4242, 4242), false, 'the holder asking again takes nothing');
    await assert.rejects(lock.acquire(777, 777), /already has a write mode client with PID or SID of 4242/);
    await lock.release('test');
    assert.equal(calls.restored, 1);
    assert.equal(lock.holder(), undefined);
    assert.equal(readFileSync(join(dir, CONTROL_LOCK), 'utf8'), '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('control lock: a restarted daemon learns the holder from CONTROL_LOCK', async () => {
  const dir = runDir();
  try {
    const first = new ControlLock(dir, fakePlatform().pio, () => {});
    await first.acquire(31337, 31337);
    const { pio, calls } = fakePlatform();
    const second = new ControlLock(dir, pio, () => {});
    assert.equal(second.holder(), 31337);
    await second.release('holder gone at start');
    assert.equal(calls.restored, 1);
    assert.equal(new ControlLock(dir, pio, () => {}).holder(), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('control lock: when CONTROL_LOCK cannot be written, the holder is not believed taken', async () => {
  const dir = runDir();
  try {
    const warnings: string[] = [];
    const lock = new ControlLock(dir, fakePlatform().pio, (line) => warnings.push(line));
    assert.equal(lock.holder(), undefined);
    // A non-empty directory in its place: the rename of the new contents over it fails.
    mkdirSync(join(dir, CONTROL_LOCK, 'blocker'), { recursive: true });
    await assert.rejects(lock.acquire(5150, 5150));
    assert.equal(lock.holder(), undefined, 'what is known is what reached the disk');
    assert.match(warnings.join('\n'), /CONTROL_LOCK/, 'the untrusted directory was reported when read again');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
