// A bus connection handed from one process to another (pid-reuse and fork tests).
//   node handoff-client.mjs creator <fifo> [<options as JSON>]
//     connects to $DBUS_SYSTEM_BUS_ADDRESS and says Hello; pings io.github.geopm (Peer.Ping needs
//     no caller lookup: its reply proves the daemon has seen the connection announced) and waits
//     for the clock of process start times to move on, so any process started later has a later
//     start time; makes the io.github.geopm calls of `options.calls` ({member, signature, body})
//     if any; prints {"pid": <own pid>, "name": <unique name>, "child": <pid>, "calls": [outcomes]},
//     starts `handoff-client.mjs child <fifo>` with the socket as fd 3 and its own stdout (as
//     `options.childUid`/`childGid` if given), and exits.
//   node handoff-client.mjs child <fifo>
//     reads one call per line of the FIFO ({"member", "signature", "body"}) and sends it on fd 3 to
//     io.github.geopm; prints {"ok":true,"value":…} or {"ok":false,"name":…,"message":…} per call.
//     (Not stdin: Node closes a child's stdin pipe when the creator exits.)
import { spawn } from 'node:child_process';
import { createReadStream, readFileSync } from 'node:fs';
import { createConnection, Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { authenticateExternal } from '../../dist/ipc/dbus/auth.js';
import { socketPathOf } from '../../dist/ipc/dbus/connection.js';
import { decodeMessage, encodeMessage, frameSize, MessageType } from '../../dist/ipc/dbus/wire.js';

/** Sends method calls on a raw socket and waits for their replies (skipping anything else). */
function caller(socket, firstSerial) {
  let serial = firstSerial;
  let inbox = Buffer.alloc(0);
  const waiting = new Map();
  socket.on('data', (chunk) => {
    inbox = Buffer.concat([inbox, chunk]);
    for (let size = frameSize(inbox); size > 0 && inbox.length >= size; size = frameSize(inbox)) {
      const msg = decodeMessage(inbox.subarray(0, size));
      inbox = inbox.subarray(size);
      waiting.get(msg.replySerial)?.(msg);
      waiting.delete(msg.replySerial);
    }
  });
  socket.resume();
  return (call) =>
    new Promise((resolve) => {
      const s = serial++;
      waiting.set(s, resolve);
      socket.write(encodeMessage({ type: MessageType.MethodCall, flags: 0, serial: s, ...call }));
    });
}

const geopmCall = ({ member, signature = '', body = [] }) => ({
  destination: 'io.github.geopm',
  path: '/io/github/geopm',
  interface: 'io.github.geopm',
  member,
  signature,
  body,
});

const outcome = (msg) =>
  msg.type === MessageType.Error
    ? { ok: false, name: msg.errorName, message: msg.body[0] }
    : { ok: true, value: msg.body };

/** Ticks since boot in 1/100 s, as /proc/uptime and process start times count them. */
const uptimeTicks = () => Math.floor(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);

if (process.argv[2] === 'creator') {
  const options = JSON.parse(process.argv[4] ?? '{}');
  const socket = createConnection(socketPathOf(process.env.DBUS_SYSTEM_BUS_ADDRESS));
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  await authenticateExternal(socket);
  const call = caller(socket, 1);
  const hello = await call({
    destination: 'org.freedesktop.DBus',
    path: '/org/freedesktop/DBus',
    interface: 'org.freedesktop.DBus',
    member: 'Hello',
  });
  await call({ ...geopmCall({ member: 'Ping' }), interface: 'org.freedesktop.DBus.Peer' });
  const seen = uptimeTicks();
  while (uptimeTicks() < seen + 2) await new Promise((resolve) => setTimeout(resolve, 5));
  const calls = [];
  for (const c of options.calls ?? []) calls.push(outcome(await call(geopmCall(c))));
  socket.removeAllListeners('data');
  socket.pause();
  const child = spawn(process.execPath, [process.argv[1], 'child', process.argv[3]], {
    stdio: ['ignore', 'inherit', 'inherit', socket],
    ...(options.childUid === undefined ? {} : { uid: options.childUid, gid: options.childGid }),
  });
  console.log(JSON.stringify({ pid: process.pid, name: hello.body[0], child: child.pid, calls }));
  process.exit(0);
} else {
  const socket = new Socket({ fd: 3, readable: true, writable: true });
  // A connection the bus closes ends the child: nothing would answer the calls.
  socket.on('close', () => process.exit(3));
  const call = caller(socket, 1000);
  for await (const line of createInterface({ input: createReadStream(process.argv[3]) })) {
    if (!line.trim()) continue;
    console.log(JSON.stringify(outcome(await call(geopmCall(JSON.parse(line))))));
  }
  socket.removeAllListeners('close');
  socket.destroy();
}
