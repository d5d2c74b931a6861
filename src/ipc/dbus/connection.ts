import { createConnection, type Socket } from 'node:net';
import { authenticateExternal } from './auth.js';
import { Inbox, type MessageScreen } from './inbox.js';
import {
  type DecodedMessage,
  encodeMessage,
  type Message,
  MessageType,
  NO_REPLY_EXPECTED,
  type WireValue,
} from './wire.js';

export const SYSTEM_BUS_DEFAULT = 'unix:path=/var/run/dbus/system_bus_socket';

/** The bus given by DBUS_SYSTEM_BUS_ADDRESS, else the system bus. */
export function systemBusAddress(): string {
  return process.env.DBUS_SYSTEM_BUS_ADDRESS || SYSTEM_BUS_DEFAULT;
}

/** An error reply from the other side: `name` is the D-Bus error name. */
export class DBusRemoteError extends Error {
  constructor(
    readonly dbusName: string,
    message: string,
  ) {
    super(message);
    this.name = 'DBusRemoteError';
  }
}

/** Connecting (socket, authentication, Hello) failed; the message names the bus address. */
export class DBusConnectError extends Error {
  constructor(
    readonly address: string,
    reason: string,
  ) {
    super(`cannot connect to the D-Bus bus at ${address}: ${reason}`);
    this.name = 'DBusConnectError';
  }
}

/**
 * Socket path of the first unix:path= address in a D-Bus address list. unix:abstract= entries
 * are passed over: Node.js 20 pads an abstract socket name with NULs to the full sun_path, so it
 * can never reach the name dbus-daemon listens on.
 */
export function socketPathOf(address: string): string {
  let abstractOnly = false;
  for (const entry of address.split(';')) {
    const m = /^unix:(.*)$/.exec(entry.trim());
    if (!m) continue;
    const params = new Map(
      m[1]!.split(',').map((kv) => {
        const i = kv.indexOf('=');
        try {
          return [kv.slice(0, i), decodeURIComponent(kv.slice(i + 1))] as [string, string];
        } catch {
          throw new DBusConnectError(address, `bad %-escape in "${kv}"`);
        }
      }),
    );
    if (params.has('path')) return params.get('path')!;
    if (params.has('abstract')) abstractOnly = true;
  }
  throw new DBusConnectError(
    address,
    abstractOnly
      ? 'unix:abstract= sockets cannot be reached from Node.js 20; give the bus a unix:path= address'
      : 'only unix:path= addresses are supported',
  );
}

/** A call got no reply in time; the message names the method, the peer and the bus. */
export class DBusTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DBusTimeoutError';
  }
}

export interface ConnectOptions {
  /** Limit for the whole set-up: socket, authentication and Hello (default 10 s). */
  timeoutMs?: number;
  /** How long a call waits for its reply unless the call says otherwise (default: defaultCallTimeoutMs()). */
  callTimeoutMs?: number;
}

const CONNECT_TIMEOUT_MS = 10_000;
/** libdbus's default reply timeout. */
export const CALL_TIMEOUT_MS_DEFAULT = 25_000;

/** JOULEGATE_DBUS_TIMEOUT_MS (milliseconds, > 0) or libdbus's 25 s. */
export function defaultCallTimeoutMs(
  value: string | undefined = process.env.JOULEGATE_DBUS_TIMEOUT_MS,
): number {
  if (value === undefined || value === '') return CALL_TIMEOUT_MS_DEFAULT;
  const ms = Number(value);
  // setTimeout holds at most 2^31-1 ms; beyond that it would fire at once.
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !(ms > 0) || ms > 2_147_483_647) {
    throw new Error(
      `JOULEGATE_DBUS_TIMEOUT_MS must be a number of milliseconds from 1 to 2147483647, not "${value}"`,
    );
  }
  return ms;
}

/** Size of the one buffer each connection reads into (see Receiver). */
const RECEIVE_BUFFER_BYTES = 64 * 1024;

/**
 * Where a connection's socket delivers what it reads. The socket reads into one reused buffer
 * (net's `onread`) instead of a new allocation per read, which under a client's 30 MiB body
 * left tens of MB of garbage chunks. Until the message layer takes over, the bytes are
 * re-emitted (copied) as 'data' events, which authentication reads.
 */
class Receiver {
  private readonly buffer = Buffer.allocUnsafeSlow(RECEIVE_BUFFER_BYTES);
  sink: (view: Buffer) => void = () => {};
  readonly onread = {
    buffer: this.buffer,
    callback: (n: number): boolean => {
      this.sink(this.buffer.subarray(0, n));
      return true;
    },
  };
}

export interface CallOptions {
  destination?: string;
  path: string;
  interface?: string;
  member: string;
  signature?: string;
  body?: WireValue[];
  /** How long to wait for the reply (default: the connection's call timeout). */
  timeoutMs?: number;
}

export type MethodCallHandler = (msg: DecodedMessage) => void;
export type SignalHandler = (msg: DecodedMessage) => void;

/**
 * One connection to a message bus: EXTERNAL authentication, Hello, calls with promised replies,
 * and a handler for incoming method calls. A malformed incoming body never throws out of the
 * socket handler; the message arrives with `bodyError` set so the handler can answer an error.
 */
export class DBusConnection {
  uniqueName = '';
  private serial = 1;
  private readonly pending = new Map<
    number,
    { resolve: (m: DecodedMessage) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();
  private readonly inbox = new Inbox({
    screen: (header) => this.screen(header),
    deliver: (msg) => this.dispatch(msg),
    refuse: (header, errorName, text) => {
      if (!this.closedError) this.replyError(header, errorName, text);
    },
  });
  private screen: MessageScreen = () => undefined;
  private signalHandler: SignalHandler = () => {};
  private closedError?: Error;
  private callHandler: MethodCallHandler = (msg) => {
    this.replyError(msg, 'org.freedesktop.DBus.Error.UnknownObject', 'no objects are exported here');
  };
  private closeListeners: ((err?: Error) => void)[] = [];
  /** Sends wait for the end of this turn (see send). */
  private corked = false;
  private readonly uncork = (): void => {
    this.corked = false;
    this.socket.uncork();
  };

  private constructor(
    private readonly socket: Socket,
    /** The bus address, for messages. */
    readonly address: string,
    private readonly callTimeoutMs: number,
    private readonly receiver: Receiver,
  ) {}

  static async connect(
    address: string = systemBusAddress(),
    options: ConnectOptions = {},
  ): Promise<DBusConnection> {
    const timeoutMs = options.timeoutMs ?? CONNECT_TIMEOUT_MS;
    const callTimeoutMs = options.callTimeoutMs ?? defaultCallTimeoutMs();
    const receiver = new Receiver();
    const socket = createConnection({ path: socketPathOf(address), onread: receiver.onread });
    receiver.sink = (view) => socket.emit('data', Buffer.from(view));
    // One limit for every step: destroying the socket fails whichever step is waiting.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy(new Error(`no answer from the bus within ${timeoutMs} ms`));
    }, timeoutMs);
    let authenticated = false;
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.once('connect', () => {
          socket.off('error', reject);
          resolve();
        });
      });
      await authenticateExternal(socket);
      authenticated = true;
      const conn = new DBusConnection(socket, address, callTimeoutMs, receiver);
      conn.attach();
      const reply = await conn.call({
        destination: 'org.freedesktop.DBus',
        path: '/org/freedesktop/DBus',
        interface: 'org.freedesktop.DBus',
        member: 'Hello',
      });
      conn.uniqueName = String(reply[0]);
      return conn;
    } catch (err) {
      socket.destroy();
      let reason = err instanceof Error ? err.message : String(err);
      // dbus-daemon answers OK to any authenticated uid, then hangs up on one its policy refuses.
      if (authenticated && !timedOut && !(err instanceof DBusRemoteError)) {
        reason = `the bus closed the connection after authentication (${reason}); its policy may not admit uid ${process.getuid?.()}`;
      }
      throw new DBusConnectError(address, reason);
    } finally {
      clearTimeout(timer);
    }
  }

  private attach(): void {
    this.socket.setNoDelay(true);
    // Bytes authentication read past its last line come back as 'data'; the rest is read into
    // the receiver's reused buffer, which the inbox must copy from before it is reused.
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk, false));
    this.receiver.sink = (view) => this.onData(view, true);
    this.socket.on('error', (err) => this.shutdown(err));
    this.socket.on('close', () => this.shutdown(new Error('D-Bus connection closed')));
    this.socket.resume(); // authentication left it paused
  }

  private onData(chunk: Buffer, reused: boolean): void {
    try {
      this.inbox.push(chunk, reused);
    } catch (err) {
      // The bus itself validates messages, so an undecodable header means the stream is
      // out of step; nothing after it can be trusted.
      this.socket.destroy(err as Error);
    }
  }

  private dispatch(msg: DecodedMessage): void {
    if (msg.type === MessageType.MethodReturn || msg.type === MessageType.Error) {
      const waiter = msg.replySerial === undefined ? undefined : this.pending.get(msg.replySerial);
      if (!waiter) return; // not ours, or its caller gave up waiting
      this.pending.delete(msg.replySerial!);
      clearTimeout(waiter.timer);
      if (msg.type === MessageType.Error) {
        const text = typeof msg.body[0] === 'string' ? msg.body[0] : '';
        waiter.reject(new DBusRemoteError(msg.errorName ?? 'org.freedesktop.DBus.Error.Failed', text));
      } else {
        waiter.resolve(msg);
      }
    } else if (msg.type === MessageType.MethodCall) {
      this.callHandler(msg);
    } else if (msg.type === MessageType.Signal) {
      this.signalHandler(msg);
    }
  }

  private shutdown(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    for (const w of this.pending.values()) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.pending.clear();
    for (const l of this.closeListeners) l(err);
  }

  onClose(listener: (err?: Error) => void): void {
    this.closeListeners.push(listener);
  }

  onMethodCall(handler: MethodCallHandler): void {
    this.callHandler = handler;
  }

  /** Signals delivered to this connection (broadcasts it subscribed to with AddMatch, unicasts). */
  onSignal(handler: SignalHandler): void {
    this.signalHandler = handler;
  }

  /**
   * Judges each incoming message from its header before its body is read: a refused body is
   * discarded unread (see Inbox). Without a screen every message is read.
   */
  screenMessages(screen: MessageScreen): void {
    this.screen = screen;
  }

  /**
   * Messages sent in one turn of the event loop leave in one writev(2): a chunk the socket read
   * holds calls from many clients, and their replies are made in the same turn. One write per
   * reply cost the daemon a system call each and woke the bus for each.
   */
  private send(msg: Message): void {
    if (this.closedError) throw this.closedError;
    const bytes = encodeMessage(msg);
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(this.uncork);
    }
    this.socket.write(bytes);
  }

  /**
   * Calls a method and resolves with the reply's message (body and signature). Without a reply
   * within the timeout it rejects with DBusTimeoutError, as libdbus does: a peer that never
   * answers must not hang the caller.
   */
  callMessage(opts: CallOptions): Promise<DecodedMessage> {
    return new Promise((resolve, reject) => {
      const serial = this.serial++;
      try {
        this.send({
          type: MessageType.MethodCall,
          flags: 0,
          serial,
          destination: opts.destination,
          path: opts.path,
          interface: opts.interface,
          member: opts.member,
          signature: opts.signature,
          body: opts.body ?? [],
        });
      } catch (err) {
        reject(err);
        return;
      }
      const timeoutMs = opts.timeoutMs ?? this.callTimeoutMs;
      const timer = setTimeout(() => {
        this.pending.delete(serial);
        const method = opts.interface ? `${opts.interface}.${opts.member}` : opts.member;
        reject(
          new DBusTimeoutError(
            `no reply to ${method} from ${opts.destination ?? 'the bus'} within ${timeoutMs} ms ` +
              `(bus ${this.address}; JOULEGATE_DBUS_TIMEOUT_MS sets the limit)`,
          ),
        );
      }, timeoutMs);
      this.pending.set(serial, { resolve, reject, timer });
    });
  }

  async call(opts: CallOptions): Promise<WireValue[]> {
    return (await this.callMessage(opts)).body;
  }

  reply(to: DecodedMessage, signature: string, body: WireValue[]): void {
    if (to.flags & NO_REPLY_EXPECTED) return;
    this.send({
      type: MessageType.MethodReturn,
      flags: NO_REPLY_EXPECTED,
      serial: this.serial++,
      replySerial: to.serial,
      destination: to.sender,
      signature,
      body,
    });
  }

  replyError(to: DecodedMessage, errorName: string, text: string): void {
    if (to.flags & NO_REPLY_EXPECTED) return;
    this.send({
      type: MessageType.Error,
      flags: NO_REPLY_EXPECTED,
      serial: this.serial++,
      replySerial: to.serial,
      destination: to.sender,
      errorName,
      signature: 's',
      body: [text],
    });
  }

  /**
   * org.freedesktop.DBus.RequestName with DO_NOT_QUEUE: true once this connection owns `name`,
   * false when another connection owns it.
   */
  async tryRequestName(name: string): Promise<boolean> {
    const [result] = await this.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'RequestName',
      signature: 'su',
      body: [name, 0x4],
    });
    // 1 = primary owner, 4 = already owner
    return result === 1 || result === 4;
  }

  /** As tryRequestName, but throws unless this connection became the owner. */
  async requestName(name: string): Promise<void> {
    if (!(await this.tryRequestName(name))) throw new Error(`bus name ${name} is owned by another process`);
  }

  /** Asks the bus daemon (org.freedesktop.DBus) one question about a connection. */
  async busQuery(member: string, uniqueName: string): Promise<WireValue> {
    const [v] = await this.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member,
      signature: 's',
      body: [uniqueName],
    });
    return v!;
  }

  close(): void {
    this.socket.end();
    this.socket.destroy();
  }
}
