import { INTERFACE_NAME } from '../ipc/dbus/interface.js';
import type { DecodedMessage, WireValue } from '../ipc/dbus/wire.js';

/** What the daemon sends back for one org.freedesktop.DBus.Properties call. */
export type PropertiesAnswer =
  | { reply: { signature: string; body: WireValue[] } }
  | { error: { name: string; text: string } };

const INVALID_ARGS = 'org.freedesktop.DBus.Error.InvalidArgs';

/** Input signature of each Properties method. */
const SIGNATURES: Record<string, string> = { Get: 'ss', GetAll: 's', Set: 'ssv' };

/** A client-chosen name in an error text: one line, bounded. */
function quoted(name: WireValue | undefined): string {
  const text = String(name ?? '').replace(/[\r\n]+/g, ' ');
  return `“${text.length > 200 ? `${text.slice(0, 200)}…` : text}”`;
}

/**
 * org.freedesktop.DBus.Properties on /io/github/geopm, answered as geopmd (GDBus) answers it:
 * io.github.geopm has no properties, so GetAll gives an empty a{sv}; Get and Set of any
 * property, and any call naming another interface, fail with InvalidArgs ("No such property",
 * "No such interface"), the error GDBus gives for both.
 */
export function answerProperties(msg: DecodedMessage): PropertiesAnswer {
  const member = msg.member ?? '';
  const expected = SIGNATURES[member];
  if (expected === undefined) {
    return {
      error: {
        name: 'org.freedesktop.DBus.Error.UnknownMethod',
        text: `No such method ${quoted(member)} on org.freedesktop.DBus.Properties`,
      },
    };
  }
  const signature = msg.signature ?? '';
  if (msg.bodyError !== undefined || signature !== expected) {
    return {
      error: {
        name: INVALID_ARGS,
        text: `Type of message, “(${signature})”, does not match expected type “(${expected})”`,
      },
    };
  }
  const [iface, property] = msg.body;
  if (iface !== INTERFACE_NAME)
    return { error: { name: INVALID_ARGS, text: `No such interface ${quoted(iface)}` } };
  if (member === 'GetAll') return { reply: { signature: 'a{sv}', body: [[]] } };
  return { error: { name: INVALID_ARGS, text: `No such property ${quoted(property)}` } };
}
