import { readFileSync } from 'node:fs';
import type { DBusConnection } from '../ipc/dbus/connection.js';
import type { Screening } from '../ipc/dbus/inbox.js';
import {
  ERROR_NAMES,
  INTERFACE_NAME,
  inSignature,
  introspectionXml,
  isMethodName,
  type MethodArgs,
  type MethodName,
  OBJECT_PATH,
  outSignature,
  PROPERTIES_INTERFACE,
  parentNodeXml,
} from '../ipc/dbus/interface.js';
import { type DecodedMessage, type MessageHeader, MessageType, type WireValue } from '../ipc/dbus/wire.js';
import { errorMessage, JoulegateError } from '../platform/errors.js';
import { CallerRegistry } from './caller-identity.js';
import { ConnectionDepartures } from './connection-watch.js';
import { dbusErrorName } from './errors.js';
import { bodyTooLarge, checkArgumentCaps, LIMITS, maxBodyBytes } from './limits.js';
import type { MethodTable } from './methods.js';
import { answerProperties } from './properties.js';
import type { Log } from './secure-files.js';
import { shown } from './text.js';

const BUS = 'org.freedesktop.DBus';
const PEER = 'org.freedesktop.DBus.Peer';
const INTROSPECTABLE = 'org.freedesktop.DBus.Introspectable';
const INVALID_ARGS = 'org.freedesktop.DBus.Error.InvalidArgs';
const LIMITS_EXCEEDED = 'org.freedesktop.DBus.Error.LimitsExceeded';

/** Every connection leaving the bus (and every name changing owner): frees per-connection state. */
const NAME_OWNER_CHANGED_MATCH = `type='signal',sender='${BUS}',path='/org/freedesktop/DBus',interface='${BUS}',member='NameOwnerChanged'`;

/** Error text on the wire: one line, bounded. */
function oneLine(text: string): string {
  const line = text.replace(/\s*\n\s*/g, '; ');
  return line.length > 1000 ? `${line.slice(0, 1000)}…` : line;
}

/**
 * The one step from decoded wire values to typed arguments: the body decoded without error
 * against exactly the method's input signature, so its values have the types MethodArgs<M>
 * derives from that signature.
 */
function isInputOf<M extends MethodName>(
  method: M,
  msg: DecodedMessage,
  body: WireValue[],
): body is WireValue[] & MethodArgs<M> {
  return msg.bodyError === undefined && (msg.signature ?? '') === inSignature(method);
}

function machineId(): string {
  try {
    return readFileSync('/etc/machine-id', 'utf8').trim();
  } catch {
    return '';
  }
}

/** The io.github.geopm method a call addresses, if it addresses one. */
function geopmMethodOf(msg: DecodedMessage): MethodName | undefined {
  const member = msg.member ?? '';
  const ours = msg.path === OBJECT_PATH && (msg.interface === undefined || msg.interface === INTERFACE_NAME);
  return ours && isMethodName(member) ? member : undefined;
}

/** The standard methods the object answers, all without arguments, as interface.member. */
function standardMethodOf(msg: DecodedMessage): string | undefined {
  if (msg.interface === PEER && (msg.member === 'Ping' || msg.member === 'GetMachineId'))
    return `${PEER}.${msg.member}`;
  if ((msg.interface === INTROSPECTABLE || msg.interface === undefined) && msg.member === 'Introspect')
    return `${INTROSPECTABLE}.Introspect`;
  return undefined;
}

const refuse = (errorName: string, text: string): Screening => ({ refuse: { errorName, text } });

export interface DispatchedService {
  readonly handlers: MethodTable;
  /** Where internal failures are logged in full (clients get one neutral line). */
  readonly log?: Log;
}

/**
 * Routes method calls arriving on the bus to the service. Each call is judged from its header
 * first (path, interface, member, signature, body size against the method's caps), so a body
 * that could not be a valid call is never read; then the decoded arguments are checked against
 * the caps, the caller is identified (once per connection) and the method runs. Every failure
 * is a D-Bus error reply. Also answers Introspectable.Introspect, Peer.Ping/GetMachineId and
 * Properties on the object.
 */
export class Dispatcher {
  private readonly callers: CallerRegistry;
  private readonly xml = introspectionXml();
  /** Settles once calls may run: the service is ready and connections are followed. */
  private readonly ready: Promise<unknown>;
  /** Per sender: its last call queued, until it is answered (see enqueue). */
  private readonly queues = new Map<string, Promise<void>>();
  private readonly departures: ConnectionDepartures;

  /**
   * `until`: calls that arrive before it settles wait for it (the daemon takes its bus name
   * before it prepares its run dir, and answers once ready).
   */
  constructor(
    private readonly conn: DBusConnection,
    private readonly service: DispatchedService,
    until: Promise<unknown> = Promise.resolve(),
  ) {
    this.callers = new CallerRegistry((member, name) => conn.busQuery(member, name));
    this.departures = new ConnectionDepartures(
      async (name) => (await conn.busQuery('NameHasOwner', name)) === true,
    );
    conn.screenMessages((header) => this.screen(header));
    conn.onMethodCall((msg) => this.enqueue(msg));
    conn.onSignal((msg) => this.onSignal(msg));
    // Sent before the daemon requests its name, so the match is in place before any client
    // can find the daemon by name.
    const following = conn
      .call({
        destination: BUS,
        path: '/org/freedesktop/DBus',
        interface: BUS,
        member: 'AddMatch',
        signature: 's',
        body: [NAME_OWNER_CHANGED_MATCH],
      })
      .then(
        () => this.callers.following(),
        (err) => this.log(`cannot follow connections (AddMatch): ${errorMessage(err)}`),
      );
    this.ready = Promise.allSettled([until, following]);
  }

  /** Connections whose caller is cached (tests watch it shrink on disconnect). */
  get cachedCallers(): number {
    return this.callers.size;
  }

  private log(line: string): void {
    this.service.log?.(`joulegated: ${line}`);
  }

  private onSignal(msg: DecodedMessage): void {
    if (msg.sender !== BUS || msg.member !== 'NameOwnerChanged') return;
    const [name, oldOwner, newOwner] = msg.body;
    if (typeof name !== 'string' || !name.startsWith(':')) return;
    // A unique name gaining its owner is a new connection (announced before any of its
    // messages reach us); losing it, a connection that left. The bus never reuses one.
    if (oldOwner === '' && newOwner === name) this.callers.connected(name);
    else if (newOwner === '') {
      this.departures.left(name);
      // Calls it sent before leaving are still queued: they are judged as the caller it was
      // (each then sees the connection gone), so its entry goes after the last of them.
      const pending = this.queues.get(name);
      if (pending) void pending.then(() => this.callers.forget(name));
      else this.callers.forget(name);
    }
  }

  /**
   * Calls of one connection are handled one after another, in the order they arrived: a
   * client that sends several at once (OpenSession then ReadSignal in one write) is answered as
   * if it had waited for each reply. Other connections' calls do not wait for them.
   */
  private enqueue(msg: DecodedMessage): void {
    const sender = msg.sender ?? '';
    const previous = this.queues.get(sender) ?? this.ready;
    // handle() answers every failure itself: the chain never rejects.
    const done = previous.then(() => this.handle(msg));
    this.queues.set(sender, done);
    void done.then(() => {
      if (this.queues.get(sender) === done) this.queues.delete(sender);
    });
  }

  /** Judges a message from its header (see Inbox): what is refused here is never decoded. */
  private screen(header: MessageHeader): Screening {
    if (header.type !== MessageType.MethodCall) {
      // Replies come from the bus we asked; signals (NameOwnerChanged) are small.
      return header.type === MessageType.Signal && header.bodyLength > LIMITS.otherMessageBytes
        ? { drop: true }
        : undefined;
    }
    const signature = header.signature ?? '';
    const standard = standardMethodOf(header);
    if (standard !== undefined) {
      return signature === ''
        ? undefined
        : refuse(INVALID_ARGS, `Invalid arguments '${signature}' to call ${standard}(), expecting ''.`);
    }
    const method = geopmMethodOf(header);
    if (method === undefined) {
      return header.bodyLength > LIMITS.otherMessageBytes
        ? refuse(
            LIMITS_EXCEEDED,
            `a body of ${header.bodyLength} bytes is over the cap of ${LIMITS.otherMessageBytes} bytes for calls outside ${INTERFACE_NAME}`,
          )
        : undefined;
    }
    if (signature !== inSignature(method)) {
      return refuse(
        ERROR_NAMES.InvalidArgument,
        `${method} expects signature '${inSignature(method)}', got '${shown(signature)}'`,
      );
    }
    if (header.bodyLength > maxBodyBytes(method)) {
      return refuse(ERROR_NAMES.InvalidArgument, bodyTooLarge(method, header.bodyLength));
    }
    return undefined;
  }

  private standard(msg: DecodedMessage): boolean {
    if (msg.interface === PEER) {
      if (msg.member === 'Ping') this.conn.reply(msg, '', []);
      else if (msg.member === 'GetMachineId') this.conn.reply(msg, 's', [machineId()]);
      else
        this.conn.replyError(
          msg,
          'org.freedesktop.DBus.Error.UnknownMethod',
          `no method ${shown(msg.member ?? '')} on Peer`,
        );
      return true;
    }
    if (msg.interface === PROPERTIES_INTERFACE && msg.path === OBJECT_PATH) {
      const answer = answerProperties(msg);
      if ('reply' in answer) this.conn.reply(msg, answer.reply.signature, answer.reply.body);
      else this.conn.replyError(msg, answer.error.name, answer.error.text);
      return true;
    }
    if (standardMethodOf(msg) !== undefined || msg.interface === INTROSPECTABLE) {
      const xml = msg.path === OBJECT_PATH ? this.xml : parentNodeXml(msg.path ?? '');
      if (msg.member === 'Introspect' && xml !== undefined) this.conn.reply(msg, 's', [xml]);
      else this.conn.replyError(msg, 'org.freedesktop.DBus.Error.UnknownObject', `no object at ${msg.path}`);
      return true;
    }
    return false;
  }

  /** Checks the arguments, then runs the method for the sender and replies. */
  private async call<M extends MethodName>(method: M, msg: DecodedMessage): Promise<void> {
    const args = msg.body;
    if (!isInputOf(method, msg, args)) {
      const why = msg.bodyError ?? `expects signature '${inSignature(method)}', got '${msg.signature ?? ''}'`;
      this.conn.replyError(msg, ERROR_NAMES.InvalidArgument, `${method} ${why}`);
      return;
    }
    checkArgumentCaps(method, args);
    if (!msg.sender) {
      this.conn.replyError(msg, ERROR_NAMES.Failed, 'message has no sender');
      return;
    }
    const caller = await this.callers.callerOf(msg.sender);
    const sender = msg.sender;
    const context = { watchConnection: () => this.departures.watch(sender) };
    const result = await this.service.handlers[method](caller, args, context);
    this.conn.reply(msg, outSignature(method), result);
  }

  private async handle(msg: DecodedMessage): Promise<void> {
    try {
      if (this.standard(msg)) return;
      if (msg.path !== OBJECT_PATH) {
        this.conn.replyError(msg, 'org.freedesktop.DBus.Error.UnknownObject', `no object at ${msg.path}`);
        return;
      }
      if (msg.interface !== undefined && msg.interface !== INTERFACE_NAME) {
        this.conn.replyError(
          msg,
          'org.freedesktop.DBus.Error.UnknownInterface',
          `no interface ${oneLine(String(msg.interface))}`,
        );
        return;
      }
      const method = geopmMethodOf(msg);
      if (method === undefined) {
        this.conn.replyError(
          msg,
          'org.freedesktop.DBus.Error.UnknownMethod',
          `no method ${oneLine(msg.member ?? '').slice(0, 100)} on ${INTERFACE_NAME}`,
        );
        return;
      }
      await this.call(method, msg);
    } catch (err) {
      this.replyFailure(msg, err);
    }
  }

  /**
   * The error reply for a failed call. The daemon's own errors carry a message meant for
   * clients; anything else (a JavaScript error from deep inside) is logged in full and answered
   * with one neutral line, so no internals reach a client.
   */
  private replyFailure(msg: DecodedMessage, err: unknown): void {
    let text = oneLine(errorMessage(err));
    if (!(err instanceof JoulegateError) && !isSystemError(err)) {
      this.log(`internal error in ${shown(msg.member ?? '')}: ${err instanceof Error ? err.stack : text}`);
      text = `internal error in ${shown(msg.member ?? '')}; the daemon logged the details`;
    }
    try {
      this.conn.replyError(msg, dbusErrorName(err), text);
    } catch {
      // the connection is gone; main exits on close
    }
  }
}

/** An error from the operating system (errno code): its message names the file and the cause. */
function isSystemError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string';
}
