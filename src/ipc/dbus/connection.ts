import { createConnection, type Socket } from 'node:net';
import handshake from '@homebridge/dbus-native/lib/handshake.js';
import {
  type DecodedMessage,
  decodeMessage,
  encodeMessage,
  frameSize,
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

/** Socket path of the first unix address in a D-Bus address list. */
export function socketPathOf(address: string): string {
  for (const entry of address.split(';')) {
    const m = /^unix:(.*)$/.exec(entry.trim());
    if (!m) continue;
    const params = new Map(
      m[1]!.split(',').map((kv) => {
        const i = kv.indexOf('=');
        return [kv.slice(0, i), decodeURIComponent(kv.slice(i + 1))] as [string, string];
      }),
    );
    if (params.has('path')) return params.get('path')!;
    if (params.has('abstract')) return `\0${params.get('abstract')}`;
  }
  throw new Error(`unsupported D-Bus address "${address}" (only unix:path= and unix:abstract=)`);
}

export interface CallOptions {
  destination?: string;
  path: string;
  interface?: string;
  member: string;
  signature?: string;
  body?: WireValue[];
}

export type MethodCallHandler = (msg: DecodedMessage) => void;

/**
 * One connection to a message bus: SASL EXTERNAL handshake, Hello, calls with promised replies,
 * and a handler for incoming method calls. A malformed incoming body never throws out of the
 * socket handler; the message arrives with `bodyError` set so the handler can answer an error.
 */
export class DBusConnection {
  uniqueName = '';
  private serial = 1;
  private readonly pending = new Map<
    number,
    { resolve: (m: DecodedMessage) => void; reject: (e: Error) => void }
  >();
  private inbox: Buffer = Buffer.alloc(0);
  private closedError?: Error;
  private callHandler: MethodCallHandler = (msg) => {
    this.replyError(msg, 'org.freedesktop.DBus.Error.UnknownObject', 'no objects are exported here');
  };
  private closeListeners: ((err?: Error) => void)[] = [];

  private constructor(private readonly socket: Socket) {}

  static async connect(address: string = systemBusAddress()): Promise<DBusConnection> {
    const socket = createConnection(socketPathOf(address));
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    await new Promise<void>((resolve, reject) => {
      handshake(socket, { authMethods: ['EXTERNAL'] }, (err) => (err ? reject(err) : resolve()));
    });
    socket.removeAllListeners('error');
    const conn = new DBusConnection(socket);
    conn.attach();
    const reply = await conn.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'Hello',
    });
    conn.uniqueName = String(reply[0]);
    return conn;
  }

  private attach(): void {
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (err) => this.shutdown(err));
    this.socket.on('close', () => this.shutdown(new Error('D-Bus connection closed')));
  }

  private onData(chunk: Buffer): void {
    this.inbox = this.inbox.length === 0 ? chunk : Buffer.concat([this.inbox, chunk]);
    for (;;) {
      let size: number;
      let msg: DecodedMessage;
      try {
        size = frameSize(this.inbox);
        if (size === 0 || this.inbox.length < size) return;
        msg = decodeMessage(this.inbox.subarray(0, size));
      } catch (err) {
        // The bus itself validates messages, so an undecodable header means the stream is
        // out of step; nothing after it can be trusted.
        this.socket.destroy(err as Error);
        return;
      }
      this.inbox = this.inbox.subarray(size);
      this.dispatch(msg);
    }
  }

  private dispatch(msg: DecodedMessage): void {
    if (msg.type === MessageType.MethodReturn || msg.type === MessageType.Error) {
      const waiter = msg.replySerial === undefined ? undefined : this.pending.get(msg.replySerial);
      if (!waiter) return;
      this.pending.delete(msg.replySerial!);
      if (msg.type === MessageType.Error) {
        const text = typeof msg.body[0] === 'string' ? msg.body[0] : '';
        waiter.reject(new DBusRemoteError(msg.errorName ?? 'org.freedesktop.DBus.Error.Failed', text));
      } else {
        waiter.resolve(msg);
      }
    } else if (msg.type === MessageType.MethodCall) {
      this.callHandler(msg);
    }
  }

  private shutdown(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    for (const w of this.pending.values()) w.reject(err);
    this.pending.clear();
    for (const l of this.closeListeners) l(err);
  }

  onClose(listener: (err?: Error) => void): void {
    this.closeListeners.push(listener);
  }

  onMethodCall(handler: MethodCallHandler): void {
    this.callHandler = handler;
  }

  private send(msg: Message): void {
    if (this.closedError) throw this.closedError;
    this.socket.write(encodeMessage(msg));
  }

  /** Calls a method and resolves with the reply's message (body and signature). */
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
      this.pending.set(serial, { resolve, reject });
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

  /** org.freedesktop.DBus.RequestName with DO_NOT_QUEUE; throws unless we became the owner. */
  async requestName(name: string): Promise<void> {
    const [result] = await this.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'RequestName',
      signature: 'su',
      body: [name, 0x4],
    });
    // 1 = primary owner, 4 = already owner
    if (result !== 1 && result !== 4) throw new Error(`bus name ${name} is owned by another process`);
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
