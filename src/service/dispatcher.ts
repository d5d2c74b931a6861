import { readFileSync } from 'node:fs';
import type { DBusConnection } from '../ipc/dbus/connection.js';
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
import type { DecodedMessage, WireValue } from '../ipc/dbus/wire.js';
import { errorMessage } from '../platform/errors.js';
import type { Caller } from './caller-access.js';
import { dbusErrorName } from './errors.js';
import type { MethodTable } from './methods.js';
import { answerProperties } from './properties.js';

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

/**
 * Routes method calls arriving on the bus to the service: checks path, interface, member and
 * the exact input signature, asks the bus daemon who the sender is, and turns every failure
 * into a D-Bus error reply. Also answers Introspectable.Introspect, Peer.Ping/GetMachineId and
 * Properties on the object.
 */
export class Dispatcher {
  private readonly callers = new Map<string, Caller>();
  private readonly xml = introspectionXml();

  constructor(
    private readonly conn: DBusConnection,
    private readonly service: { readonly handlers: MethodTable },
  ) {
    conn.onMethodCall((msg) => {
      void this.handle(msg);
    });
  }

  /** Pid and uid of a sender. A unique name is never reused, so the answer can be cached. */
  private async callerOf(sender: string): Promise<Caller> {
    const known = this.callers.get(sender);
    if (known) return known;
    const [pid, uid] = await Promise.all([
      this.conn.busQuery('GetConnectionUnixProcessID', sender),
      this.conn.busQuery('GetConnectionUnixUser', sender),
    ]);
    const caller = { pid: Number(pid), uid: Number(uid) };
    if (this.callers.size > 10_000) this.callers.clear();
    this.callers.set(sender, caller);
    return caller;
  }

  private standard(msg: DecodedMessage): boolean {
    if (msg.interface === 'org.freedesktop.DBus.Peer') {
      if (msg.member === 'Ping') this.conn.reply(msg, '', []);
      else if (msg.member === 'GetMachineId') this.conn.reply(msg, 's', [machineId()]);
      else
        this.conn.replyError(
          msg,
          'org.freedesktop.DBus.Error.UnknownMethod',
          `no method ${msg.member} on Peer`,
        );
      return true;
    }
    if (msg.interface === PROPERTIES_INTERFACE && msg.path === OBJECT_PATH) {
      const answer = answerProperties(msg);
      if ('reply' in answer) this.conn.reply(msg, answer.reply.signature, answer.reply.body);
      else this.conn.replyError(msg, answer.error.name, answer.error.text);
      return true;
    }
    if (
      msg.interface === 'org.freedesktop.DBus.Introspectable' ||
      (msg.interface === undefined && msg.member === 'Introspect')
    ) {
      const xml = msg.path === OBJECT_PATH ? this.xml : parentNodeXml(msg.path ?? '');
      if (msg.member === 'Introspect' && xml !== undefined) this.conn.reply(msg, 's', [xml]);
      else this.conn.replyError(msg, 'org.freedesktop.DBus.Error.UnknownObject', `no object at ${msg.path}`);
      return true;
    }
    return false;
  }

  /** Checks the input signature, then runs the method for the sender and replies. */
  private async call<M extends MethodName>(method: M, msg: DecodedMessage): Promise<void> {
    const args = msg.body;
    if (!isInputOf(method, msg, args)) {
      const why = msg.bodyError ?? `expects signature '${inSignature(method)}', got '${msg.signature ?? ''}'`;
      this.conn.replyError(msg, ERROR_NAMES.InvalidArgument, `${method} ${why}`);
      return;
    }
    if (!msg.sender) {
      this.conn.replyError(msg, ERROR_NAMES.Failed, 'message has no sender');
      return;
    }
    const caller = await this.callerOf(msg.sender);
    const result = await this.service.handlers[method](caller, args);
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
      const member = msg.member ?? '';
      if (!isMethodName(member)) {
        this.conn.replyError(
          msg,
          'org.freedesktop.DBus.Error.UnknownMethod',
          `no method ${oneLine(member).slice(0, 100)} on ${INTERFACE_NAME}`,
        );
        return;
      }
      await this.call(member, msg);
    } catch (err) {
      try {
        this.conn.replyError(msg, dbusErrorName(err), oneLine(errorMessage(err)));
      } catch {
        // the connection is gone; main exits on close
      }
    }
  }
}
