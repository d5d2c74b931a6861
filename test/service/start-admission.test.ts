import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StartAdmission, type StartTurn } from '../../src/service/start-admission.js';

/** Asks for a turn for `uid` and notes, in `order`, when it is granted. */
function ask(
  admission: StartAdmission,
  uid: number,
  order: string[],
  tag: string,
  signal = new AbortController().signal,
) {
  return admission.turn(uid, signal).then((turn) => {
    order.push(tag);
    return turn;
  });
}

const settle = () => new Promise((r) => setImmediate(r));

test('a burst from one uid does not delay another uid by more than one turn', async () => {
  const admission = new StartAdmission(1, 16);
  const order: string[] = [];
  const turns = new Map<string, Promise<StartTurn>>();
  for (let i = 0; i < 10; i++) turns.set(`a${i}`, ask(admission, 1000, order, `a${i}`));
  turns.set('b0', ask(admission, 2000, order, 'b0'));
  turns.set('c0', ask(admission, 3000, order, 'c0'));
  // Each turn is given back once granted (a start that finishes at once): one turn at a time.
  for (let served = 1; served <= turns.size; served++) {
    await settle();
    assert.equal(order.length, served, order.join(' '));
    (await turns.get(order.at(-1)!)!).release();
  }
  assert.deepEqual(order.slice(0, 5), ['a0', 'b0', 'c0', 'a1', 'a2']);
  assert.equal(admission.waiting, 0);
});

test('at most atOnce turns are out; a lone uid uses all of them', async () => {
  const admission = new StartAdmission(3, 16);
  const order: string[] = [];
  const turns = Array.from({ length: 5 }, (_, i) => ask(admission, 1, order, `a${i}`));
  await settle();
  assert.deepEqual(order, ['a0', 'a1', 'a2']);
  assert.equal(admission.waitingOf(1), 2);
  (await turns[1]!).release();
  (await turns[1]!).release(); // twice: counted once
  await settle();
  assert.deepEqual(order, ['a0', 'a1', 'a2', 'a3']);
  for (const t of turns.slice(0, 4)) (await t).release();
  await settle();
  assert.deepEqual(order, ['a0', 'a1', 'a2', 'a3', 'a4']);
  (await turns[4]!).release();
});

test('a start aborted while waiting leaves the queue with its reason; a full queue refuses at once', async () => {
  const admission = new StartAdmission(1, 2);
  const first = await admission.turn(7, new AbortController().signal);
  const gone = new AbortController();
  const waiting = admission.turn(7, gone.signal);
  const next = admission.turn(7, new AbortController().signal);
  await assert.rejects(
    admission.turn(7, new AbortController().signal),
    /uid 7 has 2 batch server starts waiting \(limit 2/,
  );
  // Another uid has its own queue.
  const other = admission.turn(8, new AbortController().signal);
  gone.abort(new Error('caller left'));
  await assert.rejects(waiting, /caller left/);
  assert.equal(admission.waitingOf(7), 1);
  first.release();
  // uid 8 has not been served yet: its start goes before uid 7's next.
  (await other).release();
  (await next).release();
  assert.equal(admission.waiting, 0);
});
