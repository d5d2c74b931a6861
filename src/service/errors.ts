import { ERROR_NAMES } from '../ipc/dbus/interface.js';
import { ErrorCode, JoulegateError } from '../platform/errors.js';

/** The call needs an open session and the caller has none (or its record no longer matches). */
export class NoSessionError extends JoulegateError {
  constructor(message: string) {
    super(message, ErrorCode.Runtime);
    this.name = 'NoSessionError';
  }
}

/** Write mode is held by another process or locked by an administrator. */
export class WriteLockedError extends JoulegateError {
  constructor(message: string) {
    super(message, ErrorCode.Runtime);
    this.name = 'WriteLockedError';
  }
}

/** D-Bus error name for an error thrown by a method implementation. */
export function dbusErrorName(err: unknown): string {
  if (err instanceof NoSessionError) return ERROR_NAMES.NoSession;
  if (err instanceof WriteLockedError) return ERROR_NAMES.WriteLocked;
  if (err instanceof JoulegateError) {
    if (err.code === ErrorCode.Invalid) return ERROR_NAMES.InvalidArgument;
    if (err.code === ErrorCode.Permission) return ERROR_NAMES.PermissionDenied;
  }
  return ERROR_NAMES.Failed;
}
