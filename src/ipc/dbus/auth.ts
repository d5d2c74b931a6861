import type { Socket } from 'node:net';

/**
 * Client side of the D-Bus authentication protocol (specification, "Authentication Protocol")
 * with the EXTERNAL mechanism: the bus checks our claimed uid against the socket's peer
 * credentials. Unix fd passing is not negotiated: joulegate's interface passes none.
 *
 * The bus's lines are short (OK plus a 32-digit GUID, or REJECTED plus mechanism names), so a
 * longer one means the peer is not a D-Bus bus, and reading stops there.
 */
export const MAX_AUTH_LINE_BYTES = 4096;

export class AuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthError';
  }
}

/** The bus's line as shown in an error: printable, and short. */
function shown(line: string): string {
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line);
}

/** What a server line means to a client that sent AUTH EXTERNAL with its uid. */
function verdict(line: string, uid: number): string {
  const [command = '', ...args] = line.split(' ');
  switch (command) {
    case 'OK': {
      const guid = args.join(' ');
      if (!/^[0-9a-fA-F]{32}$/.test(guid))
        throw new AuthError(`the bus answered OK with a bad GUID ${shown(guid)}`);
      return guid;
    }
    case 'REJECTED':
      throw new AuthError(
        `the bus rejected EXTERNAL authentication as uid ${uid}` +
          (args.length ? ` (it accepts: ${args.join(', ')})` : ''),
      );
    case 'ERROR':
      throw new AuthError(`the bus answered ERROR${args.length ? `: ${args.join(' ')}` : ''}`);
    default:
      throw new AuthError(`unexpected answer during authentication: ${shown(line)}`);
  }
}

/**
 * Authenticates a freshly connected socket as this process's uid and sends BEGIN; resolves with
 * the server's GUID. Bytes the bus sent after its OK line are put back on the socket, which is
 * left paused for the message layer. Rejects with AuthError, or with the socket's own error when
 * it fails or is destroyed (a caller's timeout) meanwhile.
 */
export function authenticateExternal(socket: Socket): Promise<string> {
  const uid = process.getuid?.();
  if (uid === undefined) return Promise.reject(new AuthError('EXTERNAL authentication needs a unix uid'));
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    /** Stops reading (the message layer takes over or nobody does) and settles. */
    const finish = (err: Error | undefined, guid?: string) => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      socket.pause();
      if (err) {
        socket.destroy();
        reject(err);
      } else {
        resolve(guid!);
      }
    };
    const onError = (err: Error) => finish(err);
    const onClose = () => finish(new AuthError('the bus closed the connection during authentication'));
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n');
      if ((end < 0 ? received.length : end) > MAX_AUTH_LINE_BYTES) {
        finish(new AuthError(`the bus sent a line longer than ${MAX_AUTH_LINE_BYTES} bytes`));
        return;
      }
      if (end < 0) return;
      let guid: string;
      try {
        guid = verdict(received.toString('latin1', 0, end), uid);
      } catch (err) {
        finish(err as Error);
        return;
      }
      finish(undefined, guid);
      // Only once paused: unshifting into a flowing socket would emit the bytes right away.
      const rest = received.subarray(end + 2);
      if (rest.length > 0) socket.unshift(rest);
      socket.write('BEGIN\r\n');
    };
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    // The leading NUL byte is where a bus may read our credentials; the initial response is the
    // uid in decimal ASCII, hex-encoded.
    socket.write(`\0AUTH EXTERNAL ${Buffer.from(String(uid), 'ascii').toString('hex')}\r\n`);
  });
}
